package main

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/spf13/cobra"
)

// SQS's published quotas and prices that plan uses, with where they come
// from. Quotas: the SQS Developer Guide, "Amazon SQS message quotas"
// (docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html)
// and troubleshooting-fifo-throttling-issues.html. Prices: the rates of
// aws.amazon.com/sqs/pricing for US East (N. Virginia), first 100 billion
// requests a month ($0.40 standard, $0.50 FIFO, each 64 KiB of payload one
// request), as quoted by cloudburn.io (March 2026) and factualminds.com
// (June 2026); the pricing page itself was not read when this was written
// (2026-11-27).
const (
	fifoCallsPerSecond = 300     // per API action, FIFO without high throughput
	htCallsPerSecond   = 70000   // per API action, high-throughput FIFO, in the largest regions
	inFlightLimit      = 120_000 // per queue, standard and FIFO
	maxVisibility      = 12 * time.Hour
	maxBatch           = 10
	maxBatchBytes      = 1 << 20 // a batch's payload, like a message's
	chunkBytes         = 64 << 10
	priceStandard      = 0.40 // USD per million requests
	priceFIFO          = 0.50
	quotaSource        = "SQS Developer Guide, Amazon SQS message quotas"
	priceSource        = "aws.amazon.com/sqs/pricing (us-east-1, first 100 billion requests/month) as quoted in 2026; check before you rely on it"
)

// Bounds on plan's inputs, far beyond any one queue, so that the arithmetic
// stays finite: the concurrency needed (rate x rtt / batch) then fits an
// int, and no limit or cost is +Inf, which JSON cannot encode.
const (
	maxPlanRate        = 1e9 // messages a second
	maxPlanQuota       = 1e6 // high-throughput FIFO calls a second per action
	maxPlanConcurrency = 1_000_000
	maxPlanRTT         = maxVisibility
)

// planLimit is one limit on throughput. MsgsPerSecond is null when the
// limit does not bind at any rate (standard queues' API quota).
type planLimit struct {
	Name          string   `json:"name"`
	MsgsPerSecond *float64 `json:"msgs_per_second"`
	Why           string   `json:"why"`
}

// planResult is `sqskit plan -o json`.
type planResult struct {
	Type        string  `json:"type"`
	RTTMillis   float64 `json:"rtt_ms"`
	Concurrency int     `json:"concurrency"`
	Batch       int     `json:"batch"`
	SizeBytes   int     `json:"message_bytes"`
	// Limits are every limit considered; Binding names the lowest, whose
	// rate is Ceiling.
	Limits  []planLimit `json:"limits"`
	Ceiling float64     `json:"ceiling_msgs_per_second"`
	Binding string      `json:"binding"`
	// Rate is the rate asked for (0: none), whether the ceiling reaches it,
	// and the concurrency it needs from the client.
	Rate              float64 `json:"rate,omitempty"`
	RateMet           bool    `json:"rate_met,omitempty"`
	ConcurrencyNeeded int     `json:"concurrency_needed,omitempty"`
	// Cost: requests billed per message moved through the queue (send,
	// receive, delete in batches, each 64 KiB of payload a request), the
	// price, and a 30-day month at Rate (or at the ceiling).
	RequestsPerMessage      float64 `json:"requests_per_message"`
	PricePerMillionRequests float64 `json:"price_per_million_requests_usd"`
	CostPerMillionMessages  float64 `json:"cost_per_million_messages_usd"`
	MonthlyCost             float64 `json:"monthly_cost_usd"`
	PriceSource             string  `json:"price_source"`
	QuotaSource             string  `json:"quota_source"`
}

func newPlanCmd(a *app) *cobra.Command {
	var (
		typ                      string
		rtt, process             time.Duration
		concurrency, batch, size int
		rate                     float64
		htQuota                  float64
	)
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "The throughput ceiling and cost for a queue type, round trip, concurrency and batch size",
		Long: `plan works out how many messages a second a producer or consumer can move
through one queue, which limit binds, and what a million messages and a month
cost, from SQS's published quotas and prices:

  - the client: --concurrency calls in flight per action, each taking --rtt
    and carrying --batch messages: concurrency x batch / rtt;
  - the API quota: FIFO queues take 300 calls a second per action (send,
    receive, delete each), so 3,000 messages a second in batches of 10;
    high-throughput FIFO up to 70,000 calls a second per action in the
    largest regions (--ht-quota for others); standard queues nearly unlimited;
  - the in-flight limit: 120,000 messages received and not yet deleted per
    queue, each held for --process plus a round trip.

Cost counts a send, a receive and a delete per batch, each 64 KiB of payload
billed as one request, at $0.40 (standard) or $0.50 (FIFO) per million
requests (us-east-1, first 100 billion requests a month, as quoted in 2026;
the free tier's first million is not subtracted). Check current prices
before you quote them.

It calls nothing.`,
		Example: `  sqskit plan --type fifo --rtt 10ms --concurrency 8 --batch 10
  sqskit plan --type standard --rtt 20ms --concurrency 64 --rate 50000 --size 4096
  sqskit plan --type fifo-ht --rtt 5ms --concurrency 256 --process 200ms -o json`,
		Args: noArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			switch {
			case typ != "standard" && typ != "fifo" && typ != "fifo-ht":
				return usageError("--type %q: want standard, fifo or fifo-ht", typ)
			case rtt <= 0 || rtt > maxPlanRTT:
				return usageError("--rtt %v: from 1ns to %v", rtt, maxPlanRTT)
			case concurrency < 1 || concurrency > maxPlanConcurrency:
				return usageError("--concurrency %d: from 1 to %d", concurrency, maxPlanConcurrency)
			case batch < 1 || batch > maxBatch:
				return usageError("--batch %d: from 1 to %d", batch, maxBatch)
			case size < 1 || size > maxBatchBytes:
				return usageError("--size %d: from 1 to %d bytes", size, maxBatchBytes)
			case batch*size > maxBatchBytes:
				return usageError("--batch %d of --size %d: a batch holds at most %d bytes", batch, size, maxBatchBytes)
			case !(rate >= 0 && rate <= maxPlanRate): // NaN fails both
				return usageError("--rate %v: from 0 to %g messages a second", rate, float64(maxPlanRate))
			case process < 0 || process > maxVisibility:
				return usageError("--process %v: from 0 to 12h, the longest SQS keeps a message invisible", process)
			case !(htQuota > 0 && htQuota <= maxPlanQuota): // NaN fails both
				return usageError("--ht-quota %v: more than 0, at most %g calls a second", htQuota, float64(maxPlanQuota))
			}
			res := plan(typ, rtt, process, concurrency, batch, size, rate, htQuota)
			return a.emit(res, func(w io.Writer) { res.table(w) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&typ, "type", "standard", "queue type: standard, fifo or fifo-ht (high-throughput FIFO)")
	f.DurationVar(&rtt, "rtt", 10*time.Millisecond, "one call's round trip")
	f.IntVar(&concurrency, "concurrency", 1, "calls in flight at once, per action")
	f.IntVar(&batch, "batch", 10, "messages per call, 1 to 10")
	f.IntVar(&size, "size", 1024, "bytes per message, attributes included")
	f.Float64Var(&rate, "rate", 0, "the rate you need, messages/s (0: just the ceiling)")
	f.DurationVar(&process, "process", 0, "how long a consumer holds a message before deleting it")
	f.Float64Var(&htQuota, "ht-quota", htCallsPerSecond, "high-throughput FIFO calls/s per action in your region")
	return cmd
}

func plan(typ string, rtt, process time.Duration, concurrency, batch, size int, rate, htQuota float64) planResult {
	res := planResult{Type: typ, RTTMillis: float64(rtt) / float64(time.Millisecond), Concurrency: concurrency, Batch: batch, SizeBytes: size, Rate: rate, QuotaSource: quotaSource, PriceSource: priceSource}
	num := func(f float64) *float64 { return &f }
	client := float64(concurrency) * float64(batch) / rtt.Seconds()
	res.Limits = append(res.Limits, planLimit{Name: "client", MsgsPerSecond: num(client), Why: fmt.Sprintf("%d calls in flight x %d messages / %v", concurrency, batch, rtt)})
	switch typ {
	case "fifo":
		res.Limits = append(res.Limits, planLimit{Name: "api-quota", MsgsPerSecond: num(fifoCallsPerSecond * float64(batch)), Why: fmt.Sprintf("FIFO: %d calls/s per action x %d messages", fifoCallsPerSecond, batch)})
	case "fifo-ht":
		res.Limits = append(res.Limits, planLimit{Name: "api-quota", MsgsPerSecond: num(htQuota * float64(batch)), Why: fmt.Sprintf("high-throughput FIFO: %.0f calls/s per action x %d messages (spread over many message groups)", htQuota, batch)})
	default:
		res.Limits = append(res.Limits, planLimit{Name: "api-quota", Why: "standard: nearly unlimited calls per action"})
	}
	hold := process + rtt
	res.Limits = append(res.Limits, planLimit{Name: "in-flight", MsgsPerSecond: num(inFlightLimit / hold.Seconds()), Why: fmt.Sprintf("%d in flight / (%v held + %v round trip)", inFlightLimit, process, rtt)})
	res.Ceiling = math.Inf(1)
	for _, l := range res.Limits {
		if l.MsgsPerSecond != nil && *l.MsgsPerSecond < res.Ceiling {
			res.Ceiling, res.Binding = *l.MsgsPerSecond, l.Name
		}
	}
	if rate > 0 {
		res.RateMet = res.Ceiling >= rate
		res.ConcurrencyNeeded = int(math.Ceil(rate * rtt.Seconds() / float64(batch)))
	}
	chunks := math.Ceil(float64(batch*size) / chunkBytes)
	res.RequestsPerMessage = (2*chunks + 1) / float64(batch) // send and receive carry the payload, delete does not
	res.PricePerMillionRequests = priceStandard
	if typ != "standard" {
		res.PricePerMillionRequests = priceFIFO
	}
	res.CostPerMillionMessages = cents(res.RequestsPerMessage * res.PricePerMillionRequests)
	res.MonthlyCost = cents(res.monthlyRate() * 30 * 24 * 3600 / 1e6 * res.RequestsPerMessage * res.PricePerMillionRequests)
	res.RequestsPerMessage = math.Round(res.RequestsPerMessage*1e6) / 1e6
	res.Ceiling = math.Round(res.Ceiling*100) / 100
	return res
}

func (r planResult) table(w io.Writer) {
	row(w, "LIMIT", "MSGS/S", "FROM")
	for _, l := range r.Limits {
		v := "unlimited"
		if l.MsgsPerSecond != nil {
			v = fmt.Sprintf("%.0f", *l.MsgsPerSecond)
		}
		row(w, l.Name, v, l.Why)
	}
	row(w)
	row(w, "ceiling:", fmt.Sprintf("%.0f msgs/s, bound by %s", r.Ceiling, r.Binding))
	if r.Rate > 0 {
		verdict := "reached"
		if !r.RateMet {
			verdict = "NOT reached"
		}
		row(w, "rate:", fmt.Sprintf("%.0f msgs/s %s; needs %d calls in flight per action at this round trip", r.Rate, verdict, r.ConcurrencyNeeded))
	}
	row(w, "requests:", fmt.Sprintf("%.3f per message (send, receive, delete; 64 KiB chunks)", r.RequestsPerMessage))
	row(w, "cost:", fmt.Sprintf("$%.2f per million messages at $%.2f per million requests", r.CostPerMillionMessages, r.PricePerMillionRequests))
	row(w, "month:", fmt.Sprintf("$%.2f for 30 days at %.0f msgs/s", r.MonthlyCost, r.monthlyRate()))
	row(w, "prices:", r.PriceSource)
}

// monthlyRate is the rate the month's cost is for: the rate asked for, or
// the ceiling when lower or none was asked for.
func (r planResult) monthlyRate() float64 {
	if r.Rate > 0 {
		return min(r.Rate, r.Ceiling)
	}
	return r.Ceiling
}

// cents rounds dollars to the cent.
func cents(usd float64) float64 { return math.Round(usd*100) / 100 }
