package fifo

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Dedup computes a message's deduplication id. It runs once per message,
// before its first attempt; every retry reuses the id. A message's own
// DeduplicationID, when set, wins over any Dedup.
type Dedup func(m *Message, groupID string) (string, error)

// RandomDedup gives each message a random id: retries of one Send are
// deduplicated, but the same content sent twice is two messages. A process
// that crashes and sends again gets a new id; use KeyDedup for that.
func RandomDedup() Dedup {
	return func(*Message, string) (string, error) {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		return hex.EncodeToString(b[:]), nil
	}
}

// ContentDedup derives the id from the content, as SQS's
// ContentBasedDeduplication does: the hex SHA-256 of the body. With
// attributes named, their names, types and values count too; with
// withGroup, so does the group id (two groups may then send the same body).
// The same content within 5 minutes is one message.
func ContentDedup(withGroup bool, attributes ...string) Dedup {
	names := slices.Clone(attributes)
	slices.Sort(names)
	return func(m *Message, groupID string) (string, error) {
		if len(names) == 0 && !withGroup {
			sum := sha256.Sum256([]byte(m.Body))
			return hex.EncodeToString(sum[:]), nil
		}
		h := sha256.New()
		field := func(s string) {
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
		field(m.Body)
		if withGroup {
			field(groupID)
		}
		for _, name := range names {
			v, ok := m.Attributes[name]
			if !ok {
				field("")
				continue
			}
			field(name)
			field(aws.ToString(v.DataType))
			field(aws.ToString(v.StringValue))
			field(string(v.BinaryValue))
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
}

// ErrNoDedupKey is returned by KeyDedup for a message without a DedupKey.
var ErrNoDedupKey = errors.New("fifo: message has no DedupKey")

// KeyDedup derives the id from the message's DedupKey (an order id, an
// event id) and namespace: the same key always gives the same id, across
// retries, processes and restarts, so a resend after a crash is
// deduplicated within the 5-minute window.
func KeyDedup(namespace string) Dedup {
	return func(m *Message, _ string) (string, error) {
		if m.DedupKey == "" {
			return "", ErrNoDedupKey
		}
		sum := sha256.Sum256([]byte(namespace + "\x00" + m.DedupKey))
		return hex.EncodeToString(sum[:]), nil
	}
}

// ErrNoDedupID is returned by ProvidedDedup for a message without a
// DeduplicationID.
var ErrNoDedupID = errors.New("fifo: message has no DeduplicationID")

// ProvidedDedup requires every message to carry its DeduplicationID.
func ProvidedDedup() Dedup {
	return func(*Message, string) (string, error) { return "", ErrNoDedupID }
}
