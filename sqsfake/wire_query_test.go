package sqsfake_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sqskit/sqskit/sqsfake"
)

// postForm sends a query protocol request as botocore and the AWS CLI do:
// a form-encoded POST. It returns the status and the XML answer.
func postForm(t *testing.T, endpoint string, form url.Values) (int, string) {
	t.Helper()
	form.Set("Version", "2012-11-05")
	resp, err := http.Post(endpoint, "application/x-www-form-urlencoded; charset=utf-8", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "text/xml" {
		t.Fatalf("%s: expect text/xml, got %q", form.Get("Action"), ct)
	}
	return resp.StatusCode, string(b)
}

func wantXML(t *testing.T, what, doc string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(doc, p) {
			t.Fatalf("%s: expect %s in %s", what, p, doc)
		}
	}
}

// The element names and nesting checked here are those of the SQS API
// reference's query examples (ReceiveMessage, GetQueueAttributes,
// ListQueueTags, and the ErrorResponse of "Common Errors").
func TestQueryProtocolRequestsAndXMLAnswers(t *testing.T) {
	hs := sqsfake.StartHTTP(t, sqsfake.New())
	status, doc := postForm(t, hs.URL, url.Values{"Action": {"CreateQueue"}, "QueueName": {"q"},
		"Attribute.1.Name": {"VisibilityTimeout"}, "Attribute.1.Value": {"45"}, "Tag.1.Key": {"team"}, "Tag.1.Value": {"a"}})
	queueURL := hs.URL + "/123456789012/q"
	if status != 200 {
		t.Fatalf("create: %d %s", status, doc)
	}
	wantXML(t, "create", doc, `<CreateQueueResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">`, "<CreateQueueResult><QueueUrl>"+queueURL+"</QueueUrl></CreateQueueResult>", "<ResponseMetadata><RequestId>")
	_, doc = postForm(t, hs.URL, url.Values{"Action": {"SendMessage"}, "QueueUrl": {queueURL}, "MessageBody": {"<hi & bye>"},
		"MessageAttribute.1.Name": {"kind"}, "MessageAttribute.1.Value.DataType": {"String"}, "MessageAttribute.1.Value.StringValue": {"x"}})
	wantXML(t, "send", doc, "<SendMessageResult>", "<MessageId>", "<MD5OfMessageBody>", "<MD5OfMessageAttributes>")
	// Old clients post to the queue's URL and leave QueueUrl out.
	_, doc = postForm(t, queueURL, url.Values{"Action": {"ReceiveMessage"}, "AttributeName.1": {"All"}, "MessageAttributeName.1": {"All"}, "VisibilityTimeout": {"0"}})
	wantXML(t, "receive", doc, "<ReceiveMessageResult><Message>", "<Body>&lt;hi &amp; bye&gt;</Body>",
		"<Attribute><Name>ApproximateReceiveCount</Name><Value>1</Value></Attribute>",
		"<MessageAttribute><Name>kind</Name><Value><DataType>String</DataType><StringValue>x</StringValue></Value></MessageAttribute>")
	_, doc = postForm(t, hs.URL, url.Values{"Action": {"GetQueueAttributes"}, "QueueUrl": {queueURL}, "AttributeName.1": {"VisibilityTimeout"}})
	wantXML(t, "attributes", doc, "<GetQueueAttributesResult><Attribute><Name>VisibilityTimeout</Name><Value>45</Value></Attribute></GetQueueAttributesResult>")
	_, doc = postForm(t, hs.URL, url.Values{"Action": {"ListQueueTags"}, "QueueUrl": {queueURL}})
	wantXML(t, "tags", doc, "<Tag><Key>team</Key><Value>a</Value></Tag>")
	status, doc = postForm(t, hs.URL, url.Values{"Action": {"GetQueueUrl"}, "QueueName": {"absent"}})
	if status != 400 {
		t.Fatalf("missing queue: expect 400, got %d", status)
	}
	wantXML(t, "error", doc, "<ErrorResponse", "<Error><Type>Sender</Type><Code>AWS.SimpleQueueService.NonExistentQueue</Code><Message>", "<RequestId>")
	status, doc = postForm(t, hs.URL, url.Values{"Action": {"LaunchRockets"}})
	if status != 400 || !strings.Contains(doc, "<Code>InvalidAction</Code>") {
		t.Fatalf("unknown action: expect 400 InvalidAction, got %d %s", status, doc)
	}
}

// Some clients send the query in a GET's URL.
func TestQueryProtocolInTheURL(t *testing.T) {
	hs := sqsfake.StartHTTP(t, sqsfake.New())
	resp, err := http.Get(hs.URL + "/?Action=CreateQueue&QueueName=q&Version=2012-11-05")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "<QueueUrl>"+hs.URL+"/123456789012/q</QueueUrl>") {
		t.Fatalf("expect the queue created, got %d %s", resp.StatusCode, b)
	}
}
