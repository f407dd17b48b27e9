package handlers

import "github.com/onceflow/onceflow/domain"

// Routes is the payments domain's message handlers. Add a handler here and
// the application subscribes it on every transport, behind the idempotent
// receiver; nothing else needs to know of it.
func (h *MessageHandlers) Routes() domain.Routes {
	return domain.Routes{
		{Name: ChargePaymentHandler, Consumes: TopicPaymentRequested, Produces: TopicPaymentCharged, Handle: h.ChargePayment},
		{Name: NotifyCustomerHandler, Consumes: TopicPaymentCharged, Consume: h.NotifyCustomer},
		{Name: IssueReceiptHandler, Consumes: TopicPaymentCharged, Consume: h.IssueReceipt},
	}
}
