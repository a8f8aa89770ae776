// Package dynamodb is a handler.Store on Amazon DynamoDB, for
// handler.Idempotent: every consumer and Lambda sharing a table runs a key
// once. It is a module of its own so that sqskit's core never imports
// service/dynamodb.
//
// The table has a string partition key (Options.KeyAttribute, default
// "id") and no sort key; turn on DynamoDB's time to live on
// Options.TTLAttribute (default "expires", epoch seconds) so that expired
// records are deleted. Expiry is checked by the store's own conditions,
// not left to TTL, which deletes lazily.
//
//	store, err := dynamodb.New(dynamodb.NewFromConfig(cfg), "idempotency")
//	idem, err := handler.Idempotent(store)
//	// consumer.Options.Middleware = append(..., idem)
//
// Every write is conditional: a claim succeeds only where no record is
// live, and an extension, a completion or a release only for the token
// that holds the claim (else handler.ErrNotHeld). An item is at most a
// few hundred bytes plus the handler's result (DynamoDB's limit is 400 KB).
package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqskit/sqskit/handler"
)

// API is the part of the DynamoDB client a Store calls.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

var _ handler.Store = (*Store)(nil)

// ErrConfig matches the error of invalid options.
var ErrConfig = errors.New("dynamodb: invalid options")

// Options configure a Store. Zero values mean the defaults.
type Options struct {
	// KeyAttribute names the table's partition key (type S). Default "id".
	KeyAttribute string
	// TTLAttribute names the attribute holding a record's expiry in epoch
	// seconds, for DynamoDB's time to live. Default "expires".
	TTLAttribute string
}

// Store is a handler.Store on one DynamoDB table. Safe for concurrent use.
type Store struct {
	api   API
	table string
	o     Options
}

// Item attributes besides the key and the TTL.
const (
	attrStatus = "status"
	attrUntil  = "until_ms" // the record's expiry, Unix milliseconds
	attrToken  = "token"
	attrResult = "result"
)

// maxClaimTries bounds a claim that races records appearing and vanishing.
const maxClaimTries = 3

// New returns a Store on table. An empty table name, or an attribute name
// that collides with the store's own, returns an error matching
// ErrConfig; a nil option function is skipped.
func New(api API, table string, optFns ...func(*Options)) (*Store, error) {
	var o Options
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	if o.KeyAttribute == "" {
		o.KeyAttribute = "id"
	}
	if o.TTLAttribute == "" {
		o.TTLAttribute = "expires"
	}
	own := map[string]bool{attrStatus: true, attrUntil: true, attrToken: true, attrResult: true}
	switch {
	case api == nil:
		return nil, fmt.Errorf("%w: a nil client", ErrConfig)
	case table == "":
		return nil, fmt.Errorf("%w: an empty table name", ErrConfig)
	case own[o.KeyAttribute] || own[o.TTLAttribute] || o.KeyAttribute == o.TTLAttribute:
		return nil, fmt.Errorf("%w: KeyAttribute %q and TTLAttribute %q must differ from each other and from %v", ErrConfig, o.KeyAttribute, o.TTLAttribute, []string{attrStatus, attrUntil, attrToken, attrResult})
	}
	return &Store{api: api, table: table, o: o}, nil
}

func ms(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}

func epoch(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix()+1, 10)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func (s *Store) key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{s.o.KeyAttribute: str(k)}
}

// Claim implements handler.Store: a put on the condition that no record
// exists or the one there has expired.
func (s *Store) Claim(ctx context.Context, key, token string, now, until time.Time) (handler.Record, bool, error) {
	for range maxClaimTries {
		item := s.key(key)
		item[attrStatus], item[attrUntil], item[attrToken], item[s.o.TTLAttribute] = str(handler.StatusInProgress), ms(until), str(token), epoch(until)
		_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(s.table),
			Item:                                item,
			ConditionExpression:                 aws.String("attribute_not_exists(#k) OR #u <= :now"),
			ExpressionAttributeNames:            map[string]string{"#k": s.o.KeyAttribute, "#u": attrUntil},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":now": ms(now)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var failed *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			return handler.Record{}, true, nil
		case !errors.As(err, &failed):
			return handler.Record{}, false, fmt.Errorf("dynamodb: claim: %w", err)
		}
		existing := failed.Item
		if existing == nil { // not returned (older emulators): read it
			out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: s.key(key), ConsistentRead: aws.Bool(true)})
			if err != nil {
				return handler.Record{}, false, fmt.Errorf("dynamodb: claim: read the existing record: %w", err)
			}
			existing = out.Item
		}
		if existing == nil {
			continue // released since: claim again
		}
		rec, err := record(existing)
		if err != nil {
			return handler.Record{}, false, fmt.Errorf("dynamodb: claim: %w", err)
		}
		if !rec.Until.After(now) {
			continue // expired since the condition was checked
		}
		return rec, false, nil
	}
	return handler.Record{}, false, fmt.Errorf("dynamodb: claim: the record kept changing over %d tries", maxClaimTries)
}

// record reads an item. The table is the user's: an item this store did
// not write is an error, not a panic.
func record(item map[string]types.AttributeValue) (handler.Record, error) {
	var r handler.Record
	st, ok := item[attrStatus].(*types.AttributeValueMemberS)
	if !ok || st.Value != handler.StatusInProgress && st.Value != handler.StatusCompleted {
		return r, errors.New("an item without a valid status")
	}
	u, ok := item[attrUntil].(*types.AttributeValueMemberN)
	if !ok {
		return r, errors.New("an item without " + attrUntil)
	}
	n, err := strconv.ParseInt(u.Value, 10, 64)
	if err != nil {
		return r, fmt.Errorf("an item's %s: %w", attrUntil, err)
	}
	r.Status, r.Until = st.Value, time.UnixMilli(n)
	if b, ok := item[attrResult].(*types.AttributeValueMemberB); ok {
		r.Result = b.Value
	}
	return r, nil
}

// held is the outcome of an update or a delete on the condition that token
// holds key's in-progress record: a failed condition is handler.ErrNotHeld.
func (s *Store) held(op string, err error) error {
	var failed *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &failed):
		return fmt.Errorf("dynamodb: %s: %w", op, handler.ErrNotHeld)
	}
	return fmt.Errorf("dynamodb: %s: %w", op, err)
}

// heldCondition is that condition, its values added to values.
func (s *Store) heldCondition(token string, values map[string]types.AttributeValue) (*string, map[string]string) {
	values[":tok"], values[":inprog"] = str(token), str(handler.StatusInProgress)
	return aws.String("#t = :tok AND #s = :inprog"), map[string]string{"#t": attrToken, "#s": attrStatus}
}

// Extend implements handler.Store.
func (s *Store) Extend(ctx context.Context, key, token string, until time.Time) error {
	values := map[string]types.AttributeValue{":u": ms(until), ":e": epoch(until)}
	cond, names := s.heldCondition(token, values)
	names["#u"], names["#e"] = attrUntil, s.o.TTLAttribute
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: s.key(key),
		UpdateExpression:    aws.String("SET #u = :u, #e = :e"),
		ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	return s.held("extend", err)
}

// Complete implements handler.Store.
func (s *Store) Complete(ctx context.Context, key, token string, result []byte, expires time.Time) error {
	values := map[string]types.AttributeValue{":u": ms(expires), ":e": epoch(expires), ":done": str(handler.StatusCompleted)}
	cond, names := s.heldCondition(token, values)
	names["#u"], names["#e"], names["#r"] = attrUntil, s.o.TTLAttribute, attrResult
	update := "SET #s = :done, #u = :u, #e = :e REMOVE #r"
	if len(result) > 0 {
		values[":r"] = &types.AttributeValueMemberB{Value: result}
		update = "SET #s = :done, #u = :u, #e = :e, #r = :r"
	}
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: s.key(key),
		UpdateExpression:    aws.String(update),
		ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	return s.held("complete", err)
}

// Release implements handler.Store.
func (s *Store) Release(ctx context.Context, key, token string) error {
	values := map[string]types.AttributeValue{}
	cond, names := s.heldCondition(token, values)
	_, err := s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: s.key(key),
		ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	return s.held("release", err)
}
