package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqskit/sqskit/replay"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

const mainURL = "https://sqs.eu-west-1.amazonaws.com/210987654321/orders"

func TestLoadConfig(t *testing.T) {
	cfg, err := loadConfig(env("SQS_MAIN_URL", mainURL))
	if err != nil {
		t.Fatal(err)
	}
	want := config{mainURL: mainURL, maxAttempts: 3, backoffRate: 2 * time.Second, retention: 345600 * time.Second, level: slog.LevelInfo}
	if cfg != want {
		t.Errorf("expect the sample template's defaults %+v, got %+v", want, cfg)
	}
	for _, c := range []struct {
		env  []string
		want func(config) bool
	}{
		{[]string{"MAX_ATTEMPS", "5"}, func(c config) bool { return c.maxAttempts == 5 }},
		{[]string{"MAX_ATTEMPTS", "7"}, func(c config) bool { return c.maxAttempts == 7 }},
		{[]string{"MAX_ATTEMPS", "4", "MAX_ATTEMPTS", "4"}, func(c config) bool { return c.maxAttempts == 4 }},
		{[]string{"MAX_ATTEMPS", "0"}, func(c config) bool { return c.maxAttempts == 0 }},
		{[]string{"BACKOFF_RATE", "0"}, func(c config) bool { return c.backoffRate == 0 }},
		{[]string{"MESSAGE_RETENTION_PERIOD", "1209600"}, func(c config) bool { return c.retention == 14*24*time.Hour }},
		{[]string{"LOG_LEVEL", "DEBUG"}, func(c config) bool { return c.level == slog.LevelDebug }},
		{[]string{"LOG_LEVEL", "warning"}, func(c config) bool { return c.level == slog.LevelWarn }},
		{[]string{"LOG_LEVEL", "CRITICAL"}, func(c config) bool { return c.level == slog.LevelError }},
		{[]string{"LOG_LEVEL", "CHATTY"}, func(c config) bool { return c.level == slog.LevelInfo }},
		{[]string{"OPERATOR_QUEUE_URL", mainURL + "-operator"}, func(c config) bool { return c.operatorURL == mainURL+"-operator" }},
		{[]string{"REPORT_BATCH_ITEM_FAILURES", "true"}, func(c config) bool { return c.reportFailures }},
	} {
		cfg, err := loadConfig(env(append([]string{"SQS_MAIN_URL", mainURL}, c.env...)...))
		if err != nil || !c.want(cfg) {
			t.Errorf("%v: unexpected %+v, %v", c.env, cfg, err)
		}
	}
}

func TestLoadConfigRefusesBadSettings(t *testing.T) {
	for _, e := range [][]string{
		{},
		{"SQS_MAIN_URL", "  "},
		{"SQS_MAIN_URL", mainURL, "OPERATOR_QUEUE_URL", mainURL},
		{"SQS_MAIN_URL", mainURL, "MAX_ATTEMPS", "three"},
		{"SQS_MAIN_URL", mainURL, "MAX_ATTEMPS", "-1"},
		{"SQS_MAIN_URL", mainURL, "MAX_ATTEMPTS", "1000001"},
		{"SQS_MAIN_URL", mainURL, "MAX_ATTEMPS", "3", "MAX_ATTEMPTS", "5"},
		{"SQS_MAIN_URL", mainURL, "BACKOFF_RATE", "1.5"},
		{"SQS_MAIN_URL", mainURL, "BACKOFF_RATE", "-2"},
		{"SQS_MAIN_URL", mainURL, "MESSAGE_RETENTION_PERIOD", "59"},
		{"SQS_MAIN_URL", mainURL, "MESSAGE_RETENTION_PERIOD", "1209601"},
		{"SQS_MAIN_URL", mainURL, "REPORT_BATCH_ITEM_FAILURES", "yes please"},
		{"SQS_MAIN_URL", mainURL, "OPERATOR_QUEUE_URL", mainURL + "/"},
		{"SQS_MAIN_URL", mainURL, "OPERATOR_QUEUE_URL", "https://eu-west-1.queue.amazonaws.com/210987654321/orders"},
	} {
		if _, err := loadConfig(env(e...)); !errors.Is(err, errConfig) {
			t.Errorf("%v: expect an error matching errConfig, got %v", e, err)
		}
	}
}

// Settings whose delays cannot fit would fail every record on every
// invocation until retention deletes it: they are refused at cold start,
// naming the variable to change. The first replay waits up to
// 2 × BACKOFF_RATE.
func TestLoadConfigRefusesSettingsThatStrand(t *testing.T) {
	for _, c := range []struct {
		env  []string
		name string // the variable the error names; "" when accepted
	}{
		{[]string{"MESSAGE_RETENTION_PERIOD", "60", "BACKOFF_RATE", "31"}, "MESSAGE_RETENTION_PERIOD"},
		{[]string{"MESSAGE_RETENTION_PERIOD", "60", "BACKOFF_RATE", "30"}, ""},
		{[]string{"MESSAGE_RETENTION_PERIOD", "3600", "BACKOFF_RATE", "1801"}, "MESSAGE_RETENTION_PERIOD"},
		{[]string{"MESSAGE_RETENTION_PERIOD", "1209600", "BACKOFF_RATE", "21601"}, "BACKOFF_RATE"},
		{[]string{"MESSAGE_RETENTION_PERIOD", "1209600", "BACKOFF_RATE", "21600"}, ""},
		{[]string{"BACKOFF_RATE", "100000"}, "BACKOFF_RATE"},
		{[]string{"MAX_ATTEMPS", "0", "BACKOFF_RATE", "100000"}, "BACKOFF_RATE"},
	} {
		_, err := loadConfig(env(append([]string{"SQS_MAIN_URL", mainURL}, c.env...)...))
		switch {
		case c.name == "" && err != nil:
			t.Errorf("%v: expect accepted, got %v", c.env, err)
		case c.name != "" && (!errors.Is(err, errConfig) || !strings.Contains(err.Error(), c.name+" ")):
			t.Errorf("%v: expect an errConfig naming %s, got %v", c.env, c.name, err)
		}
	}
}

// message is a DLQ message with the sample's counter.
func message(id string, counter int) *types.Message {
	m := &types.Message{MessageId: aws.String(id), Body: aws.String("order")}
	if counter > 0 {
		m.MessageAttributes = map[string]types.MessageAttributeValue{
			replay.DefaultCounterAttribute: {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(counter))},
		}
	}
	return m
}

// The sample's delay for replay n is int(uniform(0, min(cap, rate·2^n)))
// seconds. The policy built from the same environment draws the same
// distribution: whole seconds, each value from 0 to bound-1 about equally
// often (a chi-square test over 8,000 message ids per replay), and nothing
// at or above the bound. Environment as in the sample's own test:
// BACKOFF_RATE 2, MESSAGE_RETENTION_PERIOD 200, MAX_ATTEMPS 8.
func TestDelayDistributionIsTheSamples(t *testing.T) {
	cfg, err := loadConfig(env("SQS_MAIN_URL", mainURL, "BACKOFF_RATE", "2", "MESSAGE_RETENTION_PERIOD", "200", "MAX_ATTEMPS", "8"))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.policy()
	const draws = 8000
	now := time.Now()
	for n := 1; n <= 8; n++ {
		bound := min(200, 2<<n) // min(cap, rate·2^n) with rate 2
		counts := make([]int, bound)
		for i := range draws {
			d := p.Decide(message(fmt.Sprintf("m-%d-%d", n, i), n-1), now)
			if d.Action != replay.Replay || d.Attempt != n {
				t.Fatalf("replay %d: expect a replay, got %+v", n, d)
			}
			if d.Delay%time.Second != 0 || d.Delay < 0 || d.Delay >= time.Duration(bound)*time.Second {
				t.Fatalf("replay %d: expect whole seconds from 0 to %d, got %v", n, bound-1, d.Delay)
			}
			counts[d.Delay/time.Second]++
		}
		// Chi-square against uniform over bound values; the 99.9th
		// percentile for k-1 degrees of freedom is below k-1 + 4.5·√(2(k-1)) + 10.
		expected := float64(draws) / float64(bound)
		chi := 0.0
		for _, c := range counts {
			chi += (float64(c) - expected) * (float64(c) - expected) / expected
		}
		k := float64(bound - 1)
		if limit := k + 4.5*math.Sqrt(2*k) + 10; chi > limit {
			t.Errorf("replay %d: expect a uniform spread over 0..%d s, chi-square %.1f above %.1f: %v", n, bound-1, chi, limit, counts)
		}
	}
	if d := p.Decide(message("m-x", 8), now); d.Action != replay.Escalate || d.Reason != replay.AttemptsExhausted {
		t.Errorf("expect a ninth replay refused, got %+v", d)
	}
}

// MESSAGE_RETENTION_PERIOD above 12 h caps delays at 12 h, the longest a
// message can wait in the DLQ; MAX_ATTEMPS 0 never replays.
func TestPolicyBounds(t *testing.T) {
	cfg, err := loadConfig(env("SQS_MAIN_URL", mainURL, "BACKOFF_RATE", "21600", "MESSAGE_RETENTION_PERIOD", "1209600", "MAX_ATTEMPS", "30"))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.policy()
	worst := time.Duration(0)
	for i := range 2000 {
		worst = max(worst, p.Decide(message(fmt.Sprintf("m-%d", i), 20), time.Now()).Delay)
	}
	if worst > 12*time.Hour || worst < 11*time.Hour {
		t.Errorf("expect delays up to 12 h, the longest near it, got %v", worst)
	}
	if cfg, err = loadConfig(env("SQS_MAIN_URL", mainURL, "MAX_ATTEMPS", "0")); err != nil {
		t.Fatal(err)
	}
	if d := cfg.policy().Decide(message("m-1", 0), time.Now()); d.Action != replay.Escalate || d.Reason != replay.AttemptsExhausted {
		t.Errorf("expect MAX_ATTEMPS 0 to give up at once, got %+v", d)
	}
	if err := cfg.policy().Validate(); err != nil {
		t.Errorf("expect a valid policy, got %v", err)
	}
}
