package handler

import (
	"context"
	"errors"
	"fmt"
)

// ReasonUnknownType is the reason a message a Router has no route for is
// parked under.
const ReasonUnknownType = "unknown-type"

// ErrUnknownType matches the failure of a message whose type a Router has
// no route for, or whose type it cannot tell (the attribute is missing).
// It is permanent (Escalate with ReasonUnknownType): a new version of the
// service that knows the type can replay it from the parking queue.
var ErrUnknownType = errors.New("handler: no route for the message's type")

// TypeFunc tells a message's type, the key a Router routes by. ctx is the
// handler's: EnvelopeFrom reads what Envelopes unwrapped. "" means the
// type cannot be told. It is user code: a panic fails the message.
type TypeFunc func(ctx context.Context, m *Message) string

// TypeAttribute reads the type from the String message attribute name: a
// producer's own attribute, or an SNS message attribute (raw delivery sets
// it on the SQS message; Envelopes copies it there otherwise).
func TypeAttribute(name string) TypeFunc {
	return func(_ context.Context, m *Message) string {
		if v, ok := m.MessageAttributes[name]; ok && v.BaseType() == "String" {
			return v.StringValue
		}
		return ""
	}
}

// TypeSubject reads the type from the Subject of the SNS notification
// Envelopes unwrapped ("" when not SNS or without a Subject).
func TypeSubject() TypeFunc {
	return func(ctx context.Context, _ *Message) string {
		if e := EnvelopeFrom(ctx); e != nil && e.Kind == EnvelopeSNS {
			return e.Subject
		}
		return ""
	}
}

// TypeDetailType reads the type from the detail-type of the EventBridge
// event Envelopes unwrapped.
func TypeDetailType() TypeFunc {
	return func(ctx context.Context, _ *Message) string {
		if e := EnvelopeFrom(ctx); e != nil && e.Kind == EnvelopeEventBridge {
			return e.DetailType
		}
		return ""
	}
}

// FirstType tries each TypeFunc in order and returns the first type found.
func FirstType(fns ...TypeFunc) TypeFunc {
	return func(ctx context.Context, m *Message) string {
		for _, fn := range fns {
			if t := fn(ctx, m); t != "" {
				return t
			}
		}
		return ""
	}
}

// Route is one type's handler in a Router: On (typed, JSON), OnCodec
// (typed, any Codec) or OnHandler (a plain Handler).
type Route struct {
	typ string
	h   Handler
}

// On routes type typ to fn, its body decoded from JSON as Typed does.
func On[T any](typ string, fn func(ctx context.Context, v T, m *Message) error) Route {
	return OnCodec(typ, nil, fn)
}

// OnCodec routes type typ to fn, its body decoded by codec (nil: JSON).
func OnCodec[T any](typ string, codec Codec, fn func(ctx context.Context, v T, m *Message) error) Route {
	if fn == nil {
		return Route{typ: typ}
	}
	return Route{typ: typ, h: Typed(codec, fn)}
}

// OnHandler routes type typ to h.
func OnHandler(typ string, h Handler) Route { return Route{typ: typ, h: h} }

// NewRouter returns a Handler that sends each message to the route for
// its type, as typeOf tells it; a message of no route's type, or of a type
// typeOf cannot tell, fails with ErrUnknownType and is parked at once
// under ReasonUnknownType. Each route decodes its own type, so one queue
// carries several. A nil typeOf, a nil handler, an empty type or a type
// routed twice return an error matching ErrConfig.
//
// Combine with Envelopes (first in the chain) to route on what an SNS
// notification or an EventBridge event carries:
//
//	h, err := handler.NewRouter(handler.FirstType(handler.TypeAttribute("type"), handler.TypeDetailType()),
//		handler.On("order.placed", placeOrder),
//		handler.On("order.cancelled", cancelOrder))
//	// consumer.Options.Middleware = []handler.Middleware{handler.Envelopes()}
func NewRouter(typeOf TypeFunc, routes ...Route) (Handler, error) {
	if typeOf == nil {
		return nil, fmt.Errorf("%w: NewRouter: a nil TypeFunc", ErrConfig)
	}
	table := make(map[string]Handler, len(routes))
	for _, r := range routes {
		switch _, dup := table[r.typ]; {
		case r.typ == "":
			return nil, fmt.Errorf("%w: NewRouter: a route with an empty type", ErrConfig)
		case r.h == nil:
			return nil, fmt.Errorf("%w: NewRouter: type %q has a nil handler", ErrConfig, r.typ)
		case dup:
			return nil, fmt.Errorf("%w: NewRouter: type %q routed twice", ErrConfig, r.typ)
		}
		table[r.typ] = r.h
	}
	return func(ctx context.Context, m *Message) error {
		typ := typeOf(ctx, m)
		h, ok := table[typ]
		if !ok {
			if typ == "" {
				return Escalate(ReasonUnknownType, fmt.Errorf("%w: the type cannot be told", ErrUnknownType))
			}
			return Escalate(ReasonUnknownType, fmt.Errorf("%w: %.128q", ErrUnknownType, typ))
		}
		return h(ctx, m)
	}, nil
}
