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
	if len(attrs) == 0 {
		return ""
	}
	var buf []byte
	putString := func(s string) {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		v := attrs[name]
		putString(name)
		putString(aws.ToString(v.DataType))
		if v.BinaryValue != nil {
			buf = append(buf, 2)
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(v.BinaryValue)))
			buf = append(buf, v.BinaryValue...)
		} else {
			buf = append(buf, 1)
			putString(aws.ToString(v.StringValue))
		}
	}
	sum := md5.Sum(buf)
	return hex.EncodeToString(sum[:])
}
