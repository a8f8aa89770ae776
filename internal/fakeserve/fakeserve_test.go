package fakeserve

import (
	"testing"

	"github.com/sqskit/sqskit/sqsfake"
)

func TestParseFault(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want sqsfake.Fault
	}{
		{"SendMessageBatch:2", sqsfake.Fault{Op: "SendMessageBatch", Times: 2, Err: sqsfake.ErrInternal}},
		{"DeleteMessageBatch@orders:1:lost", sqsfake.Fault{Op: "DeleteMessageBatch", Queue: "orders", Times: 1, Err: sqsfake.ErrInternal, AfterApply: true}},
		{"ReceiveMessage:3:throttled", sqsfake.Fault{Op: "ReceiveMessage", Times: 3, Err: sqsfake.ErrThrottled}},
	} {
		got, err := ParseFault(tc.spec)
		if err != nil || got.Op != tc.want.Op || got.Queue != tc.want.Queue || got.Times != tc.want.Times || got.Err != tc.want.Err || got.AfterApply != tc.want.AfterApply {
			t.Errorf("ParseFault(%q): expect %+v, got %+v, %v", tc.spec, tc.want, got, err)
		}
	}
	for _, bad := range []string{"", "Send", ":1", "Send:0", "Send:x", "Send:1:boom", "Send:1:lost:x"} {
		if _, err := ParseFault(bad); err == nil {
			t.Errorf("ParseFault(%q): expect an error", bad)
		}
	}
}
