package dispatch

import "unsafe"

// IsNil reports whether v, a piece of user code plugged in (a client, a
// strategy, a hook, a tracer provider), is none: nil, or an interface
// holding a nil pointer, map, chan or func, such as (*sqs.Client)(nil),
// whose first method call would panic. sqskit treats both alike. It reads
// the interface's data word, which is nil exactly then: reflect would cost
// a Lambda's footprint more.
func IsNil(v any) bool {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1] == nil
}
