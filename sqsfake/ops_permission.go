package sqsfake

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// AddPermission and RemovePermission edit the queue's Policy attribute, as
// SQS does: each label is one statement (Sid) granting accounts actions on
// the queue. Policies are stored and reported, not enforced.

var permissionLabel = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// permissionActions are the actions AddPermission may grant (API reference,
// AddPermission); "*" grants all of them.
var permissionActions = []string{"*", "ChangeMessageVisibility", "DeleteMessage", "GetQueueAttributes", "GetQueueUrl", "ListDeadLetterSourceQueues", "PurgeQueue", "ReceiveMessage", "SendMessage"}

type policyDoc struct {
	Version   string            `json:"Version"`
	ID        string            `json:"Id,omitempty"`
	Statement []json.RawMessage `json:"Statement"`
}

type policyStatement struct {
	Sid       string              `json:"Sid"`
	Effect    string              `json:"Effect"`
	Principal map[string][]string `json:"Principal"`
	Action    []string            `json:"Action"`
	Resource  string              `json:"Resource"`
}

// addPermission adds a statement labelled Label to the queue's policy.
func (s *Server) addPermission(ctx context.Context, in *sqs.AddPermissionInput) (*sqs.AddPermissionOutput, error) {
	f, err := s.begin(ctx, "AddPermission", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	label, err := checkLabel(in.Label)
	if err != nil {
		return nil, err
	}
	if len(in.AWSAccountIds) == 0 {
		return nil, errMissingParameter("AWSAccountIds")
	}
	if len(in.Actions) == 0 {
		return nil, errMissingParameter("Actions")
	}
	st := policyStatement{Sid: label, Effect: "Allow", Principal: map[string][]string{"AWS": nil}}
	for _, a := range in.AWSAccountIds {
		st.Principal["AWS"] = append(st.Principal["AWS"], "arn:aws:iam::"+a+":root")
	}
	for _, a := range in.Actions {
		if !slices.Contains(permissionActions, a) {
			return nil, errInvalidParameter("Value SQS:%s for parameter ActionName is invalid. Reason: Please refer to the appropriate WSDL for a list of valid actions.", a)
		}
		st.Action = append(st.Action, "SQS:"+a)
	}
	s.lock()
	defer s.mu.Unlock()
	q, err := s.lookup(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	st.Resource = q.arn
	doc, err := q.policy()
	if err != nil {
		return nil, err
	}
	for _, raw := range doc.Statement {
		if sidOf(raw) == label {
			return nil, errInvalidParameter("Value %s for parameter Label is invalid. Reason: Already exists.", label)
		}
	}
	raw, _ := json.Marshal(st)
	doc.Statement = append(doc.Statement, raw)
	q.setPolicy(doc)
	return &sqs.AddPermissionOutput{}, end(f)
}

// removePermission removes the statement labelled Label; the policy goes
// when its last statement does.
func (s *Server) removePermission(ctx context.Context, in *sqs.RemovePermissionInput) (*sqs.RemovePermissionOutput, error) {
	f, err := s.begin(ctx, "RemovePermission", queueNameOf(in.QueueUrl), in)
	if err != nil {
		return nil, err
	}
	label, err := checkLabel(in.Label)
	if err != nil {
		return nil, err
	}
	s.lock()
	defer s.mu.Unlock()
	q, err := s.lookup(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	doc, err := q.policy()
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(doc.Statement, func(raw json.RawMessage) bool { return sidOf(raw) == label })
	if i < 0 {
		return nil, errInvalidParameter("Value %s for parameter Label is invalid. Reason: can't find label on existing policy.", label)
	}
	doc.Statement = slices.Delete(doc.Statement, i, i+1)
	q.setPolicy(doc)
	return &sqs.RemovePermissionOutput{}, end(f)
}

func checkLabel(label *string) (string, error) {
	if label == nil || *label == "" {
		return "", errMissingParameter("Label")
	}
	if !permissionLabel.MatchString(*label) {
		return "", errInvalidParameter("Value %s for parameter Label is invalid. Reason: Label can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length.", *label)
	}
	return *label, nil
}

func sidOf(raw json.RawMessage) string {
	var st struct{ Sid string }
	_ = json.Unmarshal(raw, &st)
	return st.Sid
}

// policy returns the queue's policy document, or a new one.
func (q *queue) policy() (policyDoc, error) {
	doc := policyDoc{Version: "2012-10-17", ID: q.arn + "/SQSDefaultPolicy"}
	text := q.attrs.passthrough["Policy"]
	if text == "" {
		return doc, nil
	}
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		return doc, errInvalidAttributeValue("Invalid value for the parameter Policy. Reason: the queue's policy is not a JSON object.")
	}
	return doc, nil
}

func (q *queue) setPolicy(doc policyDoc) {
	if len(doc.Statement) == 0 {
		delete(q.attrs.passthrough, "Policy")
		return
	}
	text, _ := json.Marshal(doc)
	q.attrs.passthrough["Policy"] = string(text)
}
