package testenv

import "os/exec"

// StartWatched starts cmd and returns a channel closed once it has exited
// and been waited for: the exit a server of a test's own is watched by.
func StartWatched(cmd *exec.Cmd) (exited chan struct{}, err error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return exited, nil
}
