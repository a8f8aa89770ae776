package sqsrule

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// MD5OfBody is the digest SQS returns as MD5OfMessageBody.
func MD5OfBody(body string) string {
	sum := md5.Sum([]byte(body))
	return hex.EncodeToString(sum[:])
}

// MD5OfAttributes is SQS's digest of message attributes: names sorted, each
// encoded as length-prefixed name, length-prefixed data type, a transport byte
// (1 string, 2 binary) and the length-prefixed value. The SDK checks it on
// every send and receive.
func MD5OfAttributes(attrs map[string]types.MessageAttributeValue) string {
	return md5OfAttributes(attrs, func(v types.MessageAttributeValue) (string, *string, []byte) {
		return aws.ToString(v.DataType), v.StringValue, v.BinaryValue
	})
}

// MD5OfSystemAttributes is SQS's digest of message system attributes
// (AWSTraceHeader), returned as MD5OfMessageSystemAttributes: the same
// encoding as MD5OfAttributes.
func MD5OfSystemAttributes(attrs map[string]types.MessageSystemAttributeValue) string {
	return md5OfAttributes(attrs, func(v types.MessageSystemAttributeValue) (string, *string, []byte) {
		return aws.ToString(v.DataType), v.StringValue, v.BinaryValue
	})
}

// md5OfAttributes encodes attrs in name order, each value's data type,
// string and binary read by fields, and digests them.
func md5OfAttributes[V any](attrs map[string]V, fields func(V) (dataType string, s *string, b []byte)) string {
	if len(attrs) == 0 {
		return ""
	}
	var buf []byte
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		dataType, s, b := fields(attrs[name])
		buf = appendAttribute(buf, name, dataType, s, b)
	}
	return md5Hex(buf)
}

func appendAttribute(buf []byte, name, dataType string, s *string, b []byte) []byte {
	putString := func(s string) {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	putString(name)
	putString(dataType)
	if b != nil {
		buf = append(buf, 2)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
		return append(buf, b...)
	}
	buf = append(buf, 1)
	putString(aws.ToString(s))
	return buf
}

func md5Hex(buf []byte) string {
	sum := md5.Sum(buf)
	return hex.EncodeToString(sum[:])
}
