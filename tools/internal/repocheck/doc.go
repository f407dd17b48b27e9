// Package repocheck checks the repository itself rather than a package of
// the service: that `make rename` reaches every mention of the name, that
// the CI workflow runs the Makefile, that the Kubernetes manifests agree
// with the Dockerfile, the configuration defaults and deploy/*.env, and
// that the commands and links of README.md and docs/ still match the tree,
// and that the receiver as a library compiles no broker client. It has
// tests only.
package repocheck
