// Package queueref resolves a queue given by name or by URL to its URL, once,
// and compares queues however they were given.
//
// A queue URL has a scheme ("https://…"); anything else is taken for a queue
// name and resolved with GetQueueUrl when the client offers it. The SQS API
// reference documents QueueUrl as "the URL of the Amazon SQS queue" for every
// call but GetQueueUrl, so a name is never sent where a URL is expected.
package queueref

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/internal/sqserr"
	"github.com/sqskit/sqskit/internal/sqsrule"
)

// Resolver is the optional client method that turns a queue name into its
// URL; *sqs.Client has it.
type Resolver interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

var _ Resolver = (*sqs.Client)(nil)

// Wrapper is implemented by the library's own client wrappers: it says
// whether the client they wrap resolves names, which a type assertion on the
// wrapper cannot tell.
type Wrapper interface {
	QueueResolver() Resolver
}

// ErrUnresolved matches a queue name that cannot be resolved: the client has
// no GetQueueUrl, the name is not a queue name, or GetQueueUrl failed for
// good (the queue does not exist, access is denied). Callers wrap it in
// their own ErrConfig.
var ErrUnresolved = errors.New("queue name not resolved")

// Of returns client's Resolver, or nil when it has none.
func Of(client any) Resolver {
	if w, ok := client.(Wrapper); ok {
		return w.QueueResolver()
	}
	r, _ := client.(Resolver)
	return r
}

// IsURL reports whether s is a URL (has a scheme), not a queue name.
func IsURL(s string) bool {
	i := strings.Index(s, "://")
	return i > 0
}

// Name is the queue name in s: the last path element of a queue URL, or s
// itself.
func Name(s string) string {
	if !IsURL(s) {
		return s
	}
	s = strings.TrimRight(s, "/")
	return s[strings.LastIndex(s, "/")+1:]
}

// Same reports whether a and b name the same queue. Two URLs compare as
// sqsrule.SameQueue does; when either is a name, their names compare: a name
// resolves to a queue of the client's own account and region, so a URL with
// that name is taken for the same queue (a queue of that name in another
// account is refused too, the safe side for settings that must not loop).
func Same(a, b string) bool {
	if IsURL(a) && IsURL(b) {
		return sqsrule.SameQueue(a, b)
	}
	return Name(a) == Name(b)
}

// Ref is a queue given by name or URL, resolved to its URL once. It is safe
// for concurrent use.
type Ref struct {
	given string
	mu    sync.Mutex // held while resolving, so one call at a time is made
	url   string     // the URL once known; guarded by mu
}

// New returns a Ref for a queue given as name or URL.
func New(given string) *Ref {
	r := &Ref{given: given}
	if IsURL(given) {
		r.url = given
	}
	return r
}

// Given is the queue as it was given.
func (r *Ref) Given() string { return r.given }

// URL is the queue's URL, or "" before a name was resolved.
func (r *Ref) URL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.url
}

// Resolve returns the queue's URL, calling GetQueueUrl on client the first
// time for a name. A failure is not kept: the next call tries again. Errors
// that retrying cannot cure match ErrUnresolved; the others (throttling, a
// server error, the end of ctx) are GetQueueUrl's, wrapped.
func (r *Ref) Resolve(ctx context.Context, client any) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.url != "" {
		return r.url, nil
	}
	url, err := Resolve(ctx, client, r.given)
	if err != nil {
		return "", err
	}
	r.url = url
	return url, nil
}

// Resolve returns the URL of queue, a name or a URL: a URL as it is, a name
// through client's GetQueueUrl.
func Resolve(ctx context.Context, client any, queue string) (string, error) {
	if IsURL(queue) {
		return queue, nil
	}
	if err := sqsrule.CheckQueueName(queue); err != nil {
		return "", fmt.Errorf("%w: %q is neither a queue URL (it has no scheme, as https://) nor a queue name: %v", ErrUnresolved, queue, err)
	}
	res := Of(client)
	if res == nil {
		return "", fmt.Errorf("%w: queue name %q needs a client with GetQueueUrl to resolve it; pass the queue URL, or a client that has GetQueueUrl as *sqs.Client does", ErrUnresolved, queue)
	}
	out, err := res.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
	switch {
	case err != nil && (sqserr.Transient(err) || ctx.Err() != nil):
		return "", fmt.Errorf("resolve queue name %q with GetQueueUrl: %w", queue, err)
	case err != nil:
		return "", fmt.Errorf("%w: queue name %q: GetQueueUrl: %w", ErrUnresolved, queue, err)
	case out == nil || !IsURL(aws.ToString(out.QueueUrl)):
		return "", fmt.Errorf("%w: queue name %q: GetQueueUrl answered no queue URL", ErrUnresolved, queue)
	}
	return *out.QueueUrl, nil
}
