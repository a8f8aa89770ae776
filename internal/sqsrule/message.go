package sqsrule

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// CheckBody reports a body SQS would refuse: empty, or holding a character
// outside #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF, or invalid
// UTF-8.
func CheckBody(body string) error {
	if body == "" {
		return violation(CodeMissingParameter, "MessageBody", "the message body must contain at least one character")
	}
	for i, r := range body {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(body[i:]); size == 1 {
				return violation(CodeInvalidMessageContents, "MessageBody", "invalid UTF-8 at byte %d", i)
			}
		}
		if !allowedRune(r) {
			return violation(CodeInvalidMessageContents, "MessageBody", "character %U at byte %d is not allowed", r, i)
		}
	}
	return nil
}

func allowedRune(r rune) bool {
	switch {
	case r == 0x9 || r == 0xA || r == 0xD:
		return true
	case r >= 0x20 && r <= 0xD7FF:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return true
	case r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// MessageSize is the size SQS counts against MaximumMessageSize: the body plus
// every attribute's name, data type and value.
func MessageSize(body string, attrs map[string]types.MessageAttributeValue) int {
	n := len(body)
	for name, v := range attrs {
		n += len(name)
		if v.DataType != nil {
			n += len(*v.DataType)
		}
		if v.StringValue != nil {
			n += len(*v.StringValue)
		}
		n += len(v.BinaryValue)
	}
	return n
}

// CheckSize reports a message larger than max bytes (body and attributes).
func CheckSize(body string, attrs map[string]types.MessageAttributeValue, max int) error {
	if size := MessageSize(body, attrs); size > max {
		return violation(CodeInvalidParameterValue, "MessageBody", "message must be shorter than %d bytes, is %d", max, size)
	}
	return nil
}

// CheckAttributes reports message attributes SQS would refuse: more than ten,
// a bad name, a bad data type, a missing or malformed value, or list values.
func CheckAttributes(attrs map[string]types.MessageAttributeValue) error {
	if len(attrs) > MaxAttributes {
		return violation(CodeInvalidParameterValue, "MessageAttributes", "%d attributes exceed the maximum of %d", len(attrs), MaxAttributes)
	}
	for name, v := range attrs {
		if err := CheckAttributeName(name); err != nil {
			return err
		}
		if err := checkAttributeValue(name, v); err != nil {
			return err
		}
	}
	return nil
}

// CheckAttributeName reports a message attribute name SQS would refuse.
func CheckAttributeName(name string) error {
	const field = "MessageAttributes"
	switch {
	case name == "":
		return violation(CodeInvalidParameterValue, field, "attribute name must not be empty")
	case len(name) > MaxAttributeNameLen:
		return violation(CodeInvalidParameterValue, field, "attribute name %q is longer than %d characters", name, MaxAttributeNameLen)
	case strings.HasPrefix(name, ".") || strings.HasSuffix(name, "."):
		return violation(CodeInvalidParameterValue, field, "attribute name %q must not start or end with a period", name)
	case strings.Contains(name, ".."):
		return violation(CodeInvalidParameterValue, field, "attribute name %q must not contain successive periods", name)
	case hasFoldPrefix(name, "aws.") || hasFoldPrefix(name, "amazon."):
		return violation(CodeInvalidParameterValue, field, "attribute name %q uses a reserved prefix", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(isAlnum(c) || c == '_' || c == '-' || c == '.') {
			return violation(CodeInvalidParameterValue, field, "attribute name %q has a character outside [A-Za-z0-9_.-]", name)
		}
	}
	return nil
}

func checkAttributeValue(name string, v types.MessageAttributeValue) error {
	const field = "MessageAttributes"
	if v.DataType == nil || *v.DataType == "" {
		return violation(CodeInvalidParameterValue, field, "attribute %q has no data type", name)
	}
	dt := *v.DataType
	if n := utf16Len(dt); n > MaxDataTypeLen {
		return violation(CodeInvalidParameterValue, field, "attribute %q data type is %d characters, longer than %d", name, n, MaxDataTypeLen)
	}
	if err := CheckBody(dt); err != nil {
		return violation(CodeInvalidParameterValue, field, "attribute %q data type has a character SQS does not allow", name)
	}
	if v.StringListValues != nil || v.BinaryListValues != nil {
		return violation(CodeInvalidParameterValue, field, "attribute %q uses list values, which SQS does not support", name)
	}
	switch BaseDataType(dt) {
	case "String":
		if v.StringValue == nil || *v.StringValue == "" {
			return violation(CodeInvalidParameterValue, field, "attribute %q of type %s must have a non-empty string value", name, dt)
		}
		if v.BinaryValue != nil {
			return violation(CodeInvalidParameterValue, field, "attribute %q of type %s must not have a binary value", name, dt)
		}
		if err := CheckBody(*v.StringValue); err != nil {
			return violation(CodeInvalidParameterValue, field, "attribute %q value has a character SQS does not allow", name)
		}
	case "Number":
		if v.StringValue == nil || !IsNumber(*v.StringValue) {
			return violation(CodeInvalidParameterValue, field, "attribute %q of type %s must carry a decimal number in StringValue", name, dt)
		}
		if v.BinaryValue != nil {
			return violation(CodeInvalidParameterValue, field, "attribute %q of type %s must not have a binary value", name, dt)
		}
	case "Binary":
		if len(v.BinaryValue) == 0 {
			return violation(CodeInvalidParameterValue, field, "attribute %q of type %s must have a non-empty binary value", name, dt)
		}
		if v.StringValue != nil {
			return violation(CodeInvalidParameterValue, field, "attribute %q of type %s must not have a string value", name, dt)
		}
	default:
		return violation(CodeInvalidParameterValue, field, "attribute %q has data type %q; it must be String, Number or Binary, optionally with a .suffix", name, dt)
	}
	return nil
}

// BaseDataType returns String, Number or Binary for a data type with an
// optional custom suffix ("Number.int" → "Number"), or "" when it is none of
// them.
func BaseDataType(dt string) string {
	base, suffix, hasSuffix := strings.Cut(dt, ".")
	if hasSuffix && suffix == "" {
		return ""
	}
	switch base {
	case "String", "Number", "Binary":
		return base
	}
	return ""
}

// IsNumber reports whether s is a decimal number as SQS accepts for Number
// attributes: an optional sign, digits with an optional fraction, and an
// optional exponent that fits in 32 bits (Java's BigDecimal syntax); at
// most 38 significant digits, leading and trailing zeros aside; and zero or
// a magnitude from 10^-128 to 10^126.
func IsNumber(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	var (
		digits, intDigits int
		leadingZeros      int  // zeros before the first significant digit
		significant       int  // digits from the first non-zero to the last non-zero
		run               int  // digits since the last non-zero
		sawPoint, nonZero bool // a decimal point; a non-zero digit
		first             byte // the first significant digit
	)
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' && !sawPoint {
			sawPoint = true
			continue
		}
		if !isDigit(c) {
			break
		}
		digits++
		if !sawPoint {
			intDigits++
		}
		switch {
		case c != '0':
			if !nonZero {
				first = c
			}
			significant += run + 1
			run, nonZero = 0, true
		case nonZero:
			run++
		default:
			leadingZeros++
		}
	}
	if digits == 0 || significant > 38 {
		return false
	}
	exp := int64(0)
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		negative := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			negative = s[i] == '-'
			i++
		}
		start := i
		for ; i < len(s) && isDigit(s[i]); i++ {
			if exp = exp*10 + int64(s[i]-'0'); exp > 1<<31 {
				return false // beyond BigDecimal's 32-bit exponent
			}
		}
		if i == start {
			return false
		}
		if negative {
			exp = -exp
		}
		if exp > 1<<31-1 {
			return false
		}
	}
	if i != len(s) {
		return false
	}
	if !nonZero {
		return true // zero, whatever its exponent
	}
	// The first significant digit stands for 10^order.
	order := exp + int64(intDigits-leadingZeros-1)
	return order >= MinNumberExponent && (order < MaxNumberExponent || (order == MaxNumberExponent && first == '1' && significant == 1))
}

// utf16Len counts characters as SQS does for the data type's 256-character
// limit: in UTF-16 units, so a character above U+FFFF counts twice.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func hasFoldPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
