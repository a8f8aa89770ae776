package sqsrule

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func code(err error) string {
	var v *Violation
	if errors.As(err, &v) {
		return v.Code
	}
	if err != nil {
		return "untyped"
	}
	return ""
}

func TestCheckBody(t *testing.T) {
	cases := []struct {
		body string
		want string
	}{
		{"plain", ""},
		{"\t\n\r", ""},
		{"\u0020\uD7FF\uE000\uFFFD", ""},
		{"\U00010000\U0010FFFF", ""},
		{"", CodeMissingParameter},
		{"\x00", CodeInvalidMessageContents},
		{"\x1f", CodeInvalidMessageContents},
		{"\uFFFE", CodeInvalidMessageContents},
		{"\uFFFF", CodeInvalidMessageContents},
		{"bad \xff utf8", CodeInvalidMessageContents},
	}
	for _, c := range cases {
		if got := code(CheckBody(c.body)); got != c.want {
			t.Errorf("CheckBody(%q): expect %q, got %q", c.body, c.want, got)
		}
	}
}

func TestIsNumber(t *testing.T) {
	good := []string{"0", "-1", "+1", "1.5", ".5", "5.", "1e10", "1E-5", "-0.0e+3", strings.Repeat("9", 38), "000" + strings.Repeat("9", 38),
		"1E+126", "1e126", "-1E+126", "10e125", "9.99e125", "1E-128", "-1e-128", "0.0001e-124", "0E+999", "0.0e-999"}
	bad := []string{"1E+200", "1.1E+126", "2e126", "1.0000000001e126", "1E-129", "9.9e-129", "1e+1000000000000", "1e-99999999999",
		"", "-", ".", "e5", "1e", "1e+", "1.2.3", "1,5", "NaN", "Inf", "0x10", " 1", "1 ", strings.Repeat("9", 39)}
	for _, s := range good {
		if !IsNumber(s) {
			t.Errorf("IsNumber(%q): expect true", s)
		}
	}
	for _, s := range bad {
		if IsNumber(s) {
			t.Errorf("IsNumber(%q): expect false", s)
		}
	}
}

func TestCheckAttributeName(t *testing.T) {
	good := []string{"a", "A.b-c_d", strings.Repeat("n", 256), "awsome", "AmazonX"}
	bad := []string{"", ".a", "a.", "a..b", "AWS.x", "aws.x", "Amazon.x", "AMAZON.x", "a b", "a/b", "é", strings.Repeat("n", 257)}
	for _, n := range good {
		if err := CheckAttributeName(n); err != nil {
			t.Errorf("CheckAttributeName(%q): expect ok, got %v", n, err)
		}
	}
	for _, n := range bad {
		if err := CheckAttributeName(n); err == nil {
			t.Errorf("CheckAttributeName(%q): expect an error", n)
		}
	}
}

func TestCheckAttributes(t *testing.T) {
	s := func(dt, v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String(dt), StringValue: aws.String(v)}
	}
	b := func(dt string, v []byte) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String(dt), BinaryValue: v}
	}
	cases := []struct {
		name string
		v    types.MessageAttributeValue
		ok   bool
	}{
		{"string", s("String", "x"), true},
		{"custom string", s("String.json", "{}"), true},
		{"number", s("Number", "1.5"), true},
		{"custom number", s("Number.int", "7"), true},
		{"binary", b("Binary", []byte{0}), true},
		{"custom binary", b("Binary.gz", []byte{1}), true},
		{"empty suffix", s("String.", "x"), false},
		{"unknown type", s("Text", "x"), false},
		{"lower-case type", s("string", "x"), false},
		{"no type", types.MessageAttributeValue{StringValue: aws.String("x")}, false},
		{"empty string", s("String", ""), false},
		{"nil string", types.MessageAttributeValue{DataType: aws.String("String")}, false},
		{"bad number", s("Number", "x"), false},
		{"empty binary", b("Binary", nil), false},
		{"binary with string", types.MessageAttributeValue{DataType: aws.String("Binary"), BinaryValue: []byte{1}, StringValue: aws.String("x")}, false},
		{"string with binary", types.MessageAttributeValue{DataType: aws.String("String"), BinaryValue: []byte{1}, StringValue: aws.String("x")}, false},
		{"empty list field", types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("x"), StringListValues: []string{}}, false},
		{"binary list", types.MessageAttributeValue{DataType: aws.String("Binary"), BinaryValue: []byte{1}, BinaryListValues: [][]byte{}}, false},
		{"bad characters", s("String", "\x00"), false},
		{"long type", s("String."+strings.Repeat("t", 250), "x"), false},
	}
	for _, c := range cases {
		err := CheckAttributes(map[string]types.MessageAttributeValue{"a": c.v})
		if (err == nil) != c.ok {
			t.Errorf("%s: expect ok=%v, got %v", c.name, c.ok, err)
		}
		if err != nil && code(err) != CodeInvalidParameterValue {
			t.Errorf("%s: expect %s, got %s", c.name, CodeInvalidParameterValue, code(err))
		}
	}
	many := map[string]types.MessageAttributeValue{}
	for i := range 11 {
		many[string(rune('a'+i))] = s("String", "v")
	}
	if err := CheckAttributes(many); err == nil {
		t.Error("expect 11 attributes to be refused")
	}
}

func TestMessageSize(t *testing.T) {
	attrs := map[string]types.MessageAttributeValue{
		"name": {DataType: aws.String("String"), StringValue: aws.String("value")},
		"bin":  {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2, 3}},
	}
	if got, want := MessageSize("body", attrs), 4+(4+6+5)+(3+6+3); got != want {
		t.Errorf("expect %d, got %d", want, got)
	}
	if err := CheckSize(strings.Repeat("x", MaxMessageBytes), nil, MaxMessageBytes); err != nil {
		t.Errorf("expect exactly 1 MiB to pass: %v", err)
	}
	if err := CheckSize(strings.Repeat("x", MaxMessageBytes+1), nil, MaxMessageBytes); err == nil {
		t.Error("expect 1 MiB + 1 to be refused")
	}
}

func TestCheckIDs(t *testing.T) {
	all := ""
	for c := byte('!'); c <= '~'; c++ {
		all += string(c)
	}
	good := []string{"a", all, strings.Repeat("x", 128)}
	bad := []string{"", " ", "a b", "tab\t", "é", strings.Repeat("x", 129), "\x7f"}
	for _, check := range []func(string) error{CheckGroupID, CheckDedupID, CheckAttemptID} {
		for _, id := range good {
			if err := check(id); err != nil {
				t.Errorf("expect %q to pass: %v", id, err)
			}
		}
		for _, id := range bad {
			if err := check(id); code(err) != CodeInvalidParameterValue {
				t.Errorf("expect %q to be refused with %s, got %v", id, CodeInvalidParameterValue, err)
			}
		}
	}
}

func TestCheckBatchIDs(t *testing.T) {
	cases := []struct {
		ids  []string
		want string
	}{
		{[]string{"a", "b-1", "C_2"}, ""},
		{nil, CodeEmptyBatchRequest},
		{strings.Split("a b c d e f g h i j k", " "), CodeTooManyEntries},
		{[]string{"a", "a"}, CodeBatchEntryIDsNotDist},
		{[]string{"a.b"}, CodeInvalidBatchEntryID},
		{[]string{""}, CodeInvalidBatchEntryID},
		{[]string{strings.Repeat("x", 81)}, CodeInvalidBatchEntryID},
		{[]string{strings.Repeat("x", 80)}, ""},
	}
	for _, c := range cases {
		if got := code(CheckBatchIDs(c.ids)); got != c.want {
			t.Errorf("CheckBatchIDs(%v): expect %q, got %q", c.ids, c.want, got)
		}
	}
}

func TestCheckQueueNameAndFIFO(t *testing.T) {
	for _, n := range []string{"q", "a-b_C9", "q.fifo", strings.Repeat("q", 75) + ".fifo", strings.Repeat("q", 80)} {
		if err := CheckQueueName(n); err != nil {
			t.Errorf("expect %q to pass: %v", n, err)
		}
	}
	for _, n := range []string{"", ".fifo", "a.b", "a b", strings.Repeat("q", 81), strings.Repeat("q", 76) + ".fifo"} {
		if err := CheckQueueName(n); err == nil {
			t.Errorf("expect %q to be refused", n)
		}
	}
	if !IsFIFO("https://sqs.us-east-1.amazonaws.com/1/q.fifo") || !IsFIFO("arn:aws:sqs:us-east-1:1:q.fifo") || IsFIFO("https://x/1/fifo") {
		t.Error("IsFIFO must follow the .fifo suffix only")
	}
}

func TestCheckDelaySeconds(t *testing.T) {
	for d, ok := range map[int32]bool{-1: false, 0: true, 900: true, 901: false} {
		if (CheckDelaySeconds(d) == nil) != ok {
			t.Errorf("CheckDelaySeconds(%d): expect ok=%v", d, ok)
		}
	}
}

func FuzzCheckBody(f *testing.F) {
	for _, s := range []string{"a", "\x00", "\uFFFE", "\U0001F600", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		err := CheckBody(body)
		if err == nil && (body == "" || !utf8.ValidString(body)) {
			t.Fatalf("accepted %q", body)
		}
		if err == nil {
			for _, r := range body {
				if !allowedRune(r) {
					t.Fatalf("accepted %q with %U", body, r)
				}
			}
		}
	})
}

func FuzzIsNumber(f *testing.F) {
	for _, s := range []string{"1", "-1.5e3", ".", "1e", "++1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if IsNumber(s) && strings.ContainsAny(s, " ,xX_") {
			t.Fatalf("accepted %q", s)
		}
	})
}

func FuzzCheckAttributeName(f *testing.F) {
	for _, s := range []string{"a", "AWS.x", "a..b", ".a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if CheckAttributeName(name) != nil {
			return
		}
		if name == "" || len(name) > MaxAttributeNameLen || strings.Contains(name, "..") || strings.HasPrefix(strings.ToLower(name), "aws.") {
			t.Fatalf("accepted %q", name)
		}
	})
}

func FuzzCheckBatchIDs(f *testing.F) {
	f.Add("a,b,c")
	f.Add("a,a")
	f.Fuzz(func(t *testing.T, joined string) {
		ids := strings.Split(joined, ",")
		if CheckBatchIDs(ids) != nil {
			return
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] || id == "" || len(id) > MaxBatchEntryIDLength {
				t.Fatalf("accepted %q", ids)
			}
			seen[id] = true
		}
	})
}
