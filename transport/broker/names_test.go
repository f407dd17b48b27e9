package broker

import "testing"

// Names of streams and consumers hold no character NATS refuses in them.
func TestNATSNames(t *testing.T) {
	names := Names{TopicPrefix: "test.x1.", ServiceName: "onceflow"}
	for got, want := range map[string]string{
		NATSStream("test.x1.payments.requested"): "test_x1_payments_requested",
		NATSStream("a*b>c d\te/f\\g"):            "a_b_c_d_e_f_g",
		names.NATSDurable("charge_payment"):      "test_x1_onceflow_charge_payment",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
