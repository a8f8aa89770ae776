package consumer

import "time"

// Hooks are optional callbacks, called synchronously on the goroutine where
// the event happens: keep them fast, and safe for concurrent use. Message
// bodies are the caller's to log or not.
type Hooks struct {
	// Received: a message arrived (poller) or an invocation began (Lambda).
	Received func(m *Message)
	// Handled: the handler returned nil after took.
	Handled func(m *Message, took time.Duration)
	// Failed: the message failed (handler error, panic, or not started).
	Failed func(m *Message, err error)
	// Deleted: the message was deleted after success.
	Deleted func(m *Message)
	// DeleteFailed: the delete failed for good; SQS will deliver it again.
	DeleteFailed func(m *Message, err error)
	// Extended: the heartbeat extended the message's visibility.
	Extended func(m *Message, visibility time.Duration)
	// LeaseLost: the message's visibility could not be kept (handle invalid,
	// 12-hour cap); its handler's ctx was cancelled and it is not deleted.
	LeaseLost func(m *Message, err error)
	// Released: a failed or unstarted message was made visible in visibleIn.
	Released func(m *Message, visibleIn time.Duration)
}

func (h *Hooks) received(m *Message) {
	if h.Received != nil {
		h.Received(m)
	}
}

func (h *Hooks) handled(m *Message, took time.Duration) {
	if h.Handled != nil {
		h.Handled(m, took)
	}
}

func (h *Hooks) failed(m *Message, err error) {
	if h.Failed != nil {
		h.Failed(m, err)
	}
}

func (h *Hooks) deleted(m *Message) {
	if h.Deleted != nil {
		h.Deleted(m)
	}
}

func (h *Hooks) deleteFailed(m *Message, err error) {
	if h.DeleteFailed != nil {
		h.DeleteFailed(m, err)
	}
}

func (h *Hooks) extended(m *Message, d time.Duration) {
	if h.Extended != nil {
		h.Extended(m, d)
	}
}

func (h *Hooks) leaseLost(m *Message, err error) {
	if h.LeaseLost != nil {
		h.LeaseLost(m, err)
	}
}

func (h *Hooks) released(m *Message, d time.Duration) {
	if h.Released != nil {
		h.Released(m, d)
	}
}
