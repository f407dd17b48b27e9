package broker

import "testing"

// Names of streams and consumers hold no character NATS refuses in them.
func TestNATSNames(t *testing.T) {
	names := Names{TopicPrefix: "test.x1.", ServiceName: "onceflow"}
	for got, want := range map[string]string{
		NATSStream("test.x1.orders.placed"): "test_x1_orders_placed",
		NATSStream("a*b>c d\te/f\\g"):       "a_b_c_d_e_f_g",
		names.NATSDurable("ship_order"):     "test_x1_onceflow_ship_order",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
