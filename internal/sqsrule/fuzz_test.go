package sqsrule

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/big"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The oracles below restate SQS's documented rules in the plainest way
// (regular expressions, math/big, the developer guide's MD5 recipe), apart
// from the code under test, so a fuzz target compares two readings of the
// rules rather than the code with itself.

// idPunctuation is the punctuation SQS lists for group, deduplication and
// receive attempt ids, beside alphanumerics.
const idPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

func idOracle(id string) bool {
	if len(id) < 1 || len(id) > 128 {
		return false
	}
	for _, r := range id {
		isAlnum := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !isAlnum && !strings.ContainsRune(idPunctuation, r) {
			return false
		}
	}
	return true
}

// FuzzCheckIDs: group, deduplication and receive attempt ids are accepted
// exactly when they are 1 to 128 alphanumerics or listed punctuation, and a
// refusal is an InvalidParameterValue on the right field.
func FuzzCheckIDs(f *testing.F) {
	for _, s := range []string{"a", "order-42", idPunctuation, strings.Repeat("x", 128), strings.Repeat("x", 129), "", " ", "a b", "é", "\x7f", "\t", "tab\tin"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		want := idOracle(id)
		for field, check := range map[string]func(string) error{
			"MessageGroupId": CheckGroupID, "MessageDeduplicationId": CheckDedupID, "ReceiveRequestAttemptId": CheckAttemptID,
		} {
			err := check(id)
			if (err == nil) != want {
				t.Fatalf("%s %q: expect accepted=%v, got %v", field, id, want, err)
			}
			var v *Violation
			if err != nil && (!errors.As(err, &v) || v.Code != CodeInvalidParameterValue || v.Field != field) {
				t.Fatalf("%s %q: expect an InvalidParameterValue violation on %s, got %#v", field, id, field, err)
			}
		}
	})
}

var numberSyntax = regexp.MustCompile(`^[+-]?([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?$`)

// numberOracle: a decimal as Java's BigDecimal reads it, with up to 38
// significant digits once leading and trailing zeros are removed, and zero
// or a magnitude from 10^-128 to 10^126.
func numberOracle(s string) bool {
	m := numberSyntax.FindStringSubmatch(s)
	if m == nil || m[1]+m[2] == "" {
		return false
	}
	exp := new(big.Int)
	if m[3] != "" {
		exp.SetString(strings.TrimPrefix(m[3], "+"), 10)
	}
	if !exp.IsInt64() || exp.Int64() > 1<<31-1 || exp.Int64() < -(1<<31) {
		return false // BigDecimal's exponent is an int
	}
	digits := m[1] + m[2]
	significant := strings.TrimLeft(digits, "0")
	if significant == "" {
		return true // zero
	}
	leading := len(digits) - len(significant)
	significant = strings.TrimRight(significant, "0")
	if len(significant) > 38 {
		return false
	}
	// |x| = 0.significant × 10^(order+1): order is the power of ten of the
	// first significant digit.
	order := new(big.Int).Add(exp, big.NewInt(int64(len(m[1])-leading-1)))
	if order.Cmp(big.NewInt(-128)) < 0 || order.Cmp(big.NewInt(126)) > 0 {
		return false
	}
	return order.Cmp(big.NewInt(126)) < 0 || significant == "1"
}

func bodyCharsOracle(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !(r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)) {
			return false
		}
	}
	return true
}

// attributeValueOracle: the data type is String, Number or Binary,
// optionally with a non-empty custom label after a period, at most 256
// characters (UTF-16 units, as the service counts) of the characters a body
// may hold; the value sits in the field the type names, non-empty, and
// nothing else is set.
func attributeValueOracle(v types.MessageAttributeValue) bool {
	if v.DataType == nil || v.StringListValues != nil || v.BinaryListValues != nil {
		return false
	}
	dt := *v.DataType
	if len(utf16.Encode([]rune(dt))) > 256 || !bodyCharsOracle(dt) {
		return false
	}
	base := dt
	if i := strings.IndexByte(dt, '.'); i >= 0 {
		if i == len(dt)-1 {
			return false
		}
		base = dt[:i]
	}
	switch base {
	case "String":
		return v.BinaryValue == nil && v.StringValue != nil && *v.StringValue != "" && bodyCharsOracle(*v.StringValue)
	case "Number":
		return v.BinaryValue == nil && v.StringValue != nil && numberOracle(*v.StringValue)
	case "Binary":
		return v.StringValue == nil && len(v.BinaryValue) > 0
	}
	return false
}

// FuzzCheckAttributeValue: one attribute's data type and value, including
// custom labels and Number's precision and range, are accepted exactly as
// the oracle says.
func FuzzCheckAttributeValue(f *testing.F) {
	seeds := []struct {
		dt, s      string
		b          []byte
		hasS, hasB bool
	}{
		{"String", "x", nil, true, false},
		{"String.json", "{}", nil, true, false},
		{"String.", "x", nil, true, false},
		{"String.\x00", "x", nil, true, false},
		{"String.é", "x", nil, true, false},
		{"string", "x", nil, true, false},
		{"Number", "1.5", nil, true, false},
		{"Number.int", "-0.0e+3", nil, true, false},
		{"Number", strings.Repeat("9", 38), nil, true, false},
		{"Number", strings.Repeat("9", 39), nil, true, false},
		{"Number", "1" + strings.Repeat("0", 60), nil, true, false},
		{"Number", "0." + strings.Repeat("0", 40) + "1", nil, true, false},
		{"Number", "1e126", nil, true, false},
		{"Number", "1.1e126", nil, true, false},
		{"Number", "1e127", nil, true, false},
		{"Number", "1e-128", nil, true, false},
		{"Number", "9e-129", nil, true, false},
		{"Number", "0e999999", nil, true, false},
		{"Number", "1e99999999999", nil, true, false},
		{"Number", "1,5", nil, true, false},
		{"Binary", "", []byte{0, 1}, false, true},
		{"Binary.gz", "", []byte{1}, false, true},
		{"Binary", "", []byte{}, false, true},
		{"Binary", "x", []byte{1}, true, true},
		{"Number." + strings.Repeat("t", 249), "1", nil, true, false},
		{"Number." + strings.Repeat("t", 250), "1", nil, true, false},
	}
	for _, s := range seeds {
		f.Add(s.dt, s.s, s.b, s.hasS, s.hasB)
	}
	f.Fuzz(func(t *testing.T, dt, s string, b []byte, hasS, hasB bool) {
		v := types.MessageAttributeValue{DataType: aws.String(dt)}
		if hasS {
			v.StringValue = aws.String(s)
		}
		if hasB {
			v.BinaryValue = b
			if b == nil {
				v.BinaryValue = []byte{}
			}
		}
		want := attributeValueOracle(v)
		err := CheckAttributes(map[string]types.MessageAttributeValue{"a": v})
		if (err == nil) != want {
			t.Fatalf("%q = %q/%q (string %v, binary %v): expect accepted=%v, got %v", dt, s, b, hasS, hasB, want, err)
		}
		var viol *Violation
		if err != nil && (!errors.As(err, &viol) || viol.Code != CodeInvalidParameterValue) {
			t.Fatalf("expect an InvalidParameterValue violation, got %#v", err)
		}
		if hasS && BaseDataType(dt) == "Number" && IsNumber(s) != numberOracle(s) {
			t.Fatalf("IsNumber(%q): expect %v", s, numberOracle(s))
		}
	})
}

// md5Oracle is the developer guide's recipe for MD5OfMessageAttributes:
// sort by name; for each attribute, the name and the data type, each as a
// 4-byte big-endian length and its UTF-8 bytes, then one transport byte (1
// for String and Number, 2 for Binary), then the value as a 4-byte length
// and its bytes; the MD5 of it all, in lower-case hex.
func md5Oracle(attrs map[string]types.MessageAttributeValue) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	lengthPrefixed := func(b []byte) {
		_ = binary.Write(&buf, binary.BigEndian, int32(len(b)))
		buf.Write(b)
	}
	for _, n := range names {
		v := attrs[n]
		lengthPrefixed([]byte(n))
		lengthPrefixed([]byte(*v.DataType))
		if strings.HasPrefix(*v.DataType, "Binary") {
			buf.WriteByte(2)
			lengthPrefixed(v.BinaryValue)
		} else {
			buf.WriteByte(1)
			lengthPrefixed([]byte(*v.StringValue))
		}
	}
	sum := md5.Sum(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

// FuzzMD5OfAttributes: for every set of attributes SQS accepts, the digest
// matches the developer guide's recipe, restated above. Up to three
// attributes, so the sort order counts.
func FuzzMD5OfAttributes(f *testing.F) {
	f.Add("a", "String", []byte("x"), "b", "Number", []byte("1.5"), "c", "Binary", []byte{0, 1, 2})
	f.Add("zeta", "String.json", []byte(`{"k":"é"}`), "Alpha", "Binary.gz", []byte{0xff}, "alpha", "Number.int", []byte("-7"))
	f.Add("B", "String", []byte("\U0001F600"), "a", "String", []byte("y"), "_", "Number", []byte("1e-128"))
	f.Fuzz(func(t *testing.T, n1, t1 string, v1 []byte, n2, t2 string, v2 []byte, n3, t3 string, v3 []byte) {
		attrs := map[string]types.MessageAttributeValue{}
		for _, a := range []struct {
			name, dt string
			value    []byte
		}{{n1, t1, v1}, {n2, t2, v2}, {n3, t3, v3}} {
			v := types.MessageAttributeValue{DataType: aws.String(a.dt)}
			if BaseDataType(a.dt) == "Binary" {
				v.BinaryValue = a.value
			} else {
				v.StringValue = aws.String(string(a.value))
			}
			attrs[a.name] = v
		}
		if CheckAttributes(attrs) != nil {
			return
		}
		if got, want := MD5OfAttributes(attrs), md5Oracle(attrs); got != want {
			t.Fatalf("expect %s, got %s for %v", want, got, attrs)
		}
	})
}

func TestMD5OfAttributesKnownDigest(t *testing.T) {
	if got := MD5OfAttributes(nil); got != "" {
		t.Errorf("expect no digest without attributes, got %q", got)
	}
	// Computed by hand from the recipe: name "a", type "String", value "x".
	raw := []byte{0, 0, 0, 1, 'a', 0, 0, 0, 6, 'S', 't', 'r', 'i', 'n', 'g', 1, 0, 0, 0, 1, 'x'}
	sum := md5.Sum(raw)
	attrs := map[string]types.MessageAttributeValue{"a": {DataType: aws.String("String"), StringValue: aws.String("x")}}
	if got, want := MD5OfAttributes(attrs), hex.EncodeToString(sum[:]); got != want || md5Oracle(attrs) != want {
		t.Errorf("expect %s, got %s (oracle %s)", want, got, md5Oracle(attrs))
	}
}
