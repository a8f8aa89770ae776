package s3payload_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqskit/sqskit/s3payload"
)

// TestSweepPagesAndPrefix: Sweep pages through more than one listing,
// deletes in calls of up to a thousand keys, only under its prefix, only
// what is older than its bound.
func TestSweepPagesAndPrefix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		api := newFaultyS3(newS3(t, nil), 0)
		for i := range 1001 {
			put(t, api, "payloads", fmt.Sprintf("in/old-%04d", i), "x")
		}
		put(t, api, "payloads", "other/old", "x")
		time.Sleep(2 * time.Hour)
		put(t, api, "payloads", "in/young", "x")
		rep, err := s3payload.Sweep(ctx, api, "payloads", func(o *s3payload.SweepOptions) {
			o.KeyPrefix = "in/"
			o.Retention, o.MaxVisibility, o.Margin = time.Hour, time.Minute, time.Minute
		})
		if err != nil {
			t.Fatal(err)
		}
		want := s3payload.SweepReport{Listed: 1002, Expired: 1001, Deleted: 1001, Bound: time.Hour + 2*time.Minute}
		if rep != want {
			t.Errorf("expect %+v, got %+v", want, rep)
		}
		if ks := keys(t, api, "payloads"); len(ks) != 2 {
			t.Errorf("expect in/young and other/old kept, got %v", ks)
		}
		if n := api.Calls("DeleteObjects"); n != 2 {
			t.Errorf("expect 2 delete calls (1,000 and 1 keys), got %d", n)
		}
	})
}

// TestSweepErrors: invalid options match ErrConfig; a failed listing is
// returned; a failed delete is counted and returned, and the sweep goes
// on.
func TestSweepErrors(t *testing.T) {
	ctx := context.Background()
	api := newFaultyS3(newS3(t, nil), 0)
	for name, fn := range map[string]func(*s3payload.SweepOptions){
		"no-retention":   func(o *s3payload.SweepOptions) { o.WholeBucket = true },
		"long-retention": func(o *s3payload.SweepOptions) { o.Retention, o.WholeBucket = 400*24*time.Hour, true },
		"negative":       func(o *s3payload.SweepOptions) { o.Retention, o.Margin, o.WholeBucket = time.Hour, -1, true },
	} {
		if _, err := s3payload.Sweep(ctx, api, "payloads", fn); !errors.Is(err, s3payload.ErrConfig) {
			t.Errorf("%s: expect ErrConfig, got %v", name, err)
		}
	}
	put(t, api, "payloads", "a", "x")
	now := func(o *s3payload.SweepOptions) {
		o.Retention, o.WholeBucket = time.Hour, true
		o.Now = func() time.Time { return time.Now().Add(48 * time.Hour) }
	}
	api.failNext("ListObjectsV2", 1)
	if _, err := s3payload.Sweep(ctx, api, "payloads", now); !errors.Is(err, errInjected) {
		t.Errorf("expect the listing's error, got %v", err)
	}
	api.failNext("DeleteObjects", 1)
	rep, err := s3payload.Sweep(ctx, api, "payloads", now)
	if !errors.Is(err, errInjected) || rep.Expired != 1 || rep.Failed != 1 {
		t.Errorf("expect one expired, failed, and the error; got %+v, %v", rep, err)
	}
}
