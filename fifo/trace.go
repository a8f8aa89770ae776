package fifo

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// traceHeaderKey is the carrier key of the AWSTraceHeader system attribute
// (handler.TraceHeaderKey), the one AWS X-Ray's propagator writes.
const traceHeaderKey = handler.TraceHeaderKey

// maxTraceHeader bounds an AWSTraceHeader: X-Ray's are about 100
// characters; anything past 1 KiB is not one.
const maxTraceHeader = 1024

// checkTraceHeader reports an AWSTraceHeader SQS would refuse, or that is
// not a trace header: empty, longer than 1 KiB, or not printable ASCII.
func checkTraceHeader(h string) error {
	if h == "" || len(h) > maxTraceHeader {
		return &sqsrule.Violation{Code: sqsrule.CodeInvalidParameterValue, Field: "MessageSystemAttributes", Reason: "AWSTraceHeader must be 1 to 1,024 characters"}
	}
	for i := 0; i < len(h); i++ {
		if h[i] < 0x20 || h[i] > 0x7e {
			return &sqsrule.Violation{Code: sqsrule.CodeInvalidParameterValue, Field: "MessageSystemAttributes", Reason: "AWSTraceHeader must be printable ASCII"}
		}
	}
	return nil
}

// injection is what a Propagator wrote for one message, applied after it
// returns within the message's budget (see inject).
type injection struct {
	p      *prepared
	fields map[string]string
}

func (c *injection) Get(key string) string {
	if v, ok := c.fields[key]; ok {
		return v
	}
	if key == traceHeaderKey {
		return c.p.traceHeader
	}
	if v, ok := c.p.attrs[key]; ok && sqsrule.BaseDataType(aws.ToString(v.DataType)) == "String" {
		return aws.ToString(v.StringValue)
	}
	return ""
}

func (c *injection) Set(key, value string) {
	if c.fields == nil {
		c.fields = map[string]string{}
	}
	c.fields[key] = value
}

func (c *injection) Keys() []string {
	keys := slices.Collect(maps.Keys(c.fields))
	if c.p.traceHeader != "" {
		keys = append(keys, traceHeaderKey)
	}
	for name := range c.p.attrs {
		keys = append(keys, name)
	}
	return keys
}

// inject asks the Propagator for ctx's trace context and adds it to p
// within the budget, so trace context never costs the caller a message:
//
//   - X-Amzn-Trace-Id becomes the AWSTraceHeader system attribute, which
//     counts toward neither the ten attributes nor the size, unless the
//     message sets TraceHeader itself;
//   - other keys become String message attributes, traceparent first, then
//     tracestate, then the rest by name, while the message has fewer than
//     ten attributes and stays within MaxMessageBytes; a key the message
//     already carries keeps the caller's value;
//   - a field that does not fit, or that SQS would refuse, is skipped: it
//     is counted (sqskit.send.trace_context.skipped) and logged at Debug,
//     and the message is sent without it.
//
// It returns the keys skipped. The caller's attribute map is
// never changed: p gets a copy when something is added.
func (s *Sender) inject(ctx context.Context, p *prepared) (skipped []string) {
	c := &injection{p: p}
	s.obs.faults.Inject(ctx, s.opts.Propagator, c) // a Propagator that panics costs the trace context only
	if len(c.fields) == 0 {
		return nil
	}
	keys := slices.SortedFunc(maps.Keys(c.fields), func(a, b string) int {
		if d := injectRank(a) - injectRank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	copied := false
	for _, key := range keys {
		value := c.fields[key]
		if key == traceHeaderKey {
			switch {
			case p.msg.TraceHeader != "":
			case checkTraceHeader(value) != nil:
				skipped = append(skipped, key)
			default:
				p.traceHeader = value
			}
			continue
		}
		if _, taken := p.attrs[key]; taken {
			continue
		}
		v := types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
		one := map[string]types.MessageAttributeValue{key: v}
		size := len(key) + len("String") + len(value)
		if len(p.attrs) >= sqsrule.MaxAttributes || p.size+size > s.opts.MaxMessageBytes || sqsrule.CheckAttributes(one) != nil {
			skipped = append(skipped, key)
			continue
		}
		if !copied {
			p.attrs = maps.Clone(p.attrs)
			if p.attrs == nil {
				p.attrs = map[string]types.MessageAttributeValue{}
			}
			copied = true
		}
		p.attrs[key] = v
		p.size += size
	}
	return skipped
}

// injectRank orders the fields a Propagator wrote: the ones a trace cannot
// do without first.
func injectRank(key string) int {
	switch key {
	case traceHeaderKey:
		return 0
	case "traceparent":
		return 1
	case "tracestate":
		return 2
	}
	return 3
}
