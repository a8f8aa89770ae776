package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Codec decodes a message body into a value. JSONCodec is the default; a
// user's codec (protobuf, Avro, anything) plugs in by implementing Decode,
// without this package importing it. Decode is untrusted user code: a
// panic in it fails the message as a decode failure, never the process.
type Codec interface {
	// Decode decodes data into v, a non-nil pointer to the handler's type.
	// An error means the body can never decode: the message is parked.
	Decode(data []byte, v any) error
}

// JSONCodec decodes JSON with encoding/json. The zero value accepts unknown
// fields, as encoding/json does.
type JSONCodec struct {
	// DisallowUnknownFields makes a field T does not have a decode failure.
	DisallowUnknownFields bool
}

// Decode implements Codec.
func (c JSONCodec) Decode(data []byte, v any) error {
	if !c.DisallowUnknownFields {
		return json.Unmarshal(data, v)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("invalid data after the top-level value")
	}
	return nil
}

// Typed adapts a handler of a decoded body: codec decodes the body (after
// any envelope the Envelopes middleware unwrapped) into T; a nil codec is
// JSONCodec{}. A body that does not decode, or a codec that panics, is
// permanent: the outcome is Escalate(ReasonDecode, …) matching ErrDecode,
// so the message is parked at once where a parking queue is set (the
// consumer's Options.ParkingQueue, the Lambda adapter's Parker), after its
// one receive. Typed(nil, fn) is JSON(fn).
//
// It works the same in the Consumer and in the Lambda adapter, and costs
// nothing to handlers that do not use it.
func Typed[T any](codec Codec, fn func(ctx context.Context, v T, m *Message) error) Handler {
	if codec == nil {
		codec = JSONCodec{}
	}
	return func(ctx context.Context, m *Message) error {
		var v T
		if err := decode(codec, m.Body, &v); err != nil {
			return err
		}
		return fn(ctx, v, m)
	}
}

// decode runs a codec, turning its failure or panic into the permanent
// decode outcome.
func decode(codec Codec, body string, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Escalate(ReasonDecode, fmt.Errorf("%w: the codec panicked: %v", ErrDecode, p))
		}
	}()
	if derr := codec.Decode([]byte(body), v); derr != nil {
		return Escalate(ReasonDecode, fmt.Errorf("%w: %w", ErrDecode, derr))
	}
	return nil
}
