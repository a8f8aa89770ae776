package queueref

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqskit/sqskit/sqsfake"
)

const ordersURL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"

func TestNameAndSame(t *testing.T) {
	cases := []struct {
		a, b  string
		name  string // Name(a)
		same  bool
		isURL bool // IsURL(a)
	}{
		{a: ordersURL, b: ordersURL, name: "orders", same: true, isURL: true},
		{a: ordersURL, b: "orders", name: "orders", same: true, isURL: true},
		{a: "orders", b: ordersURL, name: "orders", same: true},
		{a: "orders", b: "orders", name: "orders", same: true},
		{a: "orders", b: "Orders", name: "orders"}, // names are case-sensitive
		{a: "orders", b: "orders.fifo", name: "orders"},
		{a: ordersURL + "/", b: "orders", name: "orders", same: true, isURL: true},
		{a: ordersURL, b: "https://eu-west-1.queue.amazonaws.com/123456789012/orders", name: "orders", same: true, isURL: true},
		{a: ordersURL, b: "https://sqs.eu-west-1.amazonaws.com/210987654321/orders", name: "orders", isURL: true}, // two URLs: accounts differ
		{a: "https://sqs.eu-west-1.amazonaws.com/210987654321/orders", b: "orders", name: "orders", same: true, isURL: true},
		{a: "http://localhost:4566/000000000000/dlq", b: "orders", name: "dlq", isURL: true},
		{a: "sqs.eu-west-1.amazonaws.com/123456789012/orders", b: "orders", name: "sqs.eu-west-1.amazonaws.com/123456789012/orders"},
		{a: "", b: "", name: "", same: true},
	}
	for _, c := range cases {
		t.Run(c.a+"~"+c.b, func(t *testing.T) {
			if got := Name(c.a); got != c.name {
				t.Errorf("Name: expect %q, got %q", c.name, got)
			}
			if got := IsURL(c.a); got != c.isURL {
				t.Errorf("IsURL: expect %v, got %v", c.isURL, got)
			}
			if got := Same(c.a, c.b); got != c.same {
				t.Errorf("Same: expect %v, got %v", c.same, got)
			}
			if got := Same(c.b, c.a); got != c.same {
				t.Errorf("Same reversed: expect %v, got %v", c.same, got)
			}
		})
	}
}

func FuzzSame(f *testing.F) {
	for _, s := range []string{ordersURL, "orders", "orders.fifo", "://", "a://b/c/", "http://[::1", ""} {
		f.Add(s, "orders")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !Same(a, a) {
			t.Errorf("Same(%q, itself) is false", a)
		}
		if Same(a, b) != Same(b, a) {
			t.Errorf("Same(%q, %q) is not symmetric", a, b)
		}
		if n := Name(a); IsURL(a) && len(n) > len(a) || !IsURL(a) && n != a {
			t.Errorf("Name(%q) = %q", a, n)
		}
	})
}

// counting resolves names through a fake, counting the calls, and fails the
// first fail calls.
type counting struct {
	next  Resolver
	calls atomic.Int32
	fail  int32
	err   error
}

func (c *counting) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	if n := c.calls.Add(1); n <= c.fail {
		return nil, c.err
	}
	return c.next.GetQueueUrl(ctx, in, optFns...)
}

type wrapper struct{ inner any }

func (w wrapper) QueueResolver() Resolver { return Of(w.inner) }

func TestResolve(t *testing.T) {
	ctx := context.Background()
	fake := sqsfake.New()
	client := fake.Client()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(out.QueueUrl)
	throttled := &smithy.GenericAPIError{Code: "ThrottlingException", Fault: smithy.FaultServer}

	cases := []struct {
		name      string
		client    any
		queue     string
		want      string
		unresolve bool // errors.Is(err, ErrUnresolved)
	}{
		{name: "URL as it is, no client needed", client: struct{}{}, queue: ordersURL, want: ordersURL},
		{name: "name through GetQueueUrl", client: client, queue: "orders", want: url},
		{name: "name through a wrapper that says it resolves", client: wrapper{client}, queue: "orders", want: url},
		{name: "name with a client lacking GetQueueUrl", client: struct{}{}, queue: "orders", unresolve: true},
		{name: "name with a wrapper over a client lacking GetQueueUrl", client: wrapper{struct{}{}}, queue: "orders", unresolve: true},
		{name: "missing queue", client: client, queue: "nope", unresolve: true},
		{name: "neither URL nor name", client: client, queue: "sqs.eu-west-1.amazonaws.com/1/orders", unresolve: true},
		{name: "throttled: worth a retry", client: &counting{next: client, fail: 1, err: throttled}, queue: "orders"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Resolve(ctx, c.client, c.queue)
			if c.want != "" {
				if err != nil || got != c.want {
					t.Fatalf("expect %q, got %q, %v", c.want, got, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("expect an error, got %q", got)
			}
			if errors.Is(err, ErrUnresolved) != c.unresolve {
				t.Errorf("expect errors.Is(err, ErrUnresolved) %v, got %v", c.unresolve, err)
			}
		})
	}

	t.Run("the message says what was tried", func(t *testing.T) {
		_, err := Resolve(ctx, struct{}{}, "orders")
		want := `queue name not resolved: queue name "orders" needs a client with GetQueueUrl to resolve it; pass the queue URL, or a client that has GetQueueUrl as *sqs.Client does`
		if err == nil || err.Error() != want {
			t.Errorf("expect %q, got %v", want, err)
		}
	})
	t.Run("a missing queue keeps the SDK's typed error", func(t *testing.T) {
		_, err := Resolve(ctx, client, "nope")
		var missing *types.QueueDoesNotExist
		if !errors.As(err, &missing) {
			t.Errorf("expect *types.QueueDoesNotExist in the chain, got %v", err)
		}
	})
}

func TestRefResolvesOnceAndRetriesFailures(t *testing.T) {
	ctx := context.Background()
	fake := sqsfake.New()
	client := fake.Client()
	if _, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")}); err != nil {
		t.Fatal(err)
	}
	c := &counting{next: client, fail: 1, err: &smithy.GenericAPIError{Code: "InternalError", Fault: smithy.FaultServer}}
	r := New("orders")
	if r.URL() != "" {
		t.Errorf("expect no URL before resolution, got %q", r.URL())
	}
	if _, err := r.Resolve(ctx, c); err == nil {
		t.Fatal("expect the first call's failure")
	}
	var wg sync.WaitGroup
	urls := make([]string, 8)
	for i := range urls {
		wg.Go(func() {
			var err error
			if urls[i], err = r.Resolve(ctx, c); err != nil {
				t.Errorf("expect a URL, got %v", err)
			}
		})
	}
	wg.Wait()
	if got := c.calls.Load(); got != 2 {
		t.Errorf("expect 2 GetQueueUrl calls (a failure, then one success), got %d", got)
	}
	for _, u := range urls {
		if u != urls[0] || !IsURL(u) || r.URL() != u {
			t.Errorf("expect one URL for all, got %q and %q (Ref.URL %q)", u, urls[0], r.URL())
		}
	}
	if r.Given() != "orders" {
		t.Errorf("expect Given %q, got %q", "orders", r.Given())
	}
	if u := New(ordersURL); u.URL() != ordersURL {
		t.Errorf("expect a URL to be known at once, got %q", u.URL())
	}
}
