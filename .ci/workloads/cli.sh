#!/usr/bin/env bash
# A workload of the AWS CLI against cmd/sqsfake: queues with a dead-letter
# queue, batches, attributes, FIFO groups and deduplication, visibility,
# purge, tags and message move tasks. Fails on the first answer that is not
# SQS's.
#
#   .ci/workloads/cli.sh AWS_BINARY ENDPOINT
#
# Debian's AWS CLI v2 (2.9) speaks SQS's query protocol; current v1 and v2
# builds speak AWS JSON 1.0: the same workload checks both protocols.
set -euo pipefail
AWS=$1 EP=$2
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 AWS_PAGER=""
run="cli$(date +%s%N | tail -c 9)"
steps=0

sqs() { "$AWS" --endpoint-url "$EP" --output json sqs "$@"; }
ok() { steps=$((steps + 1)); echo "ok   $*"; }
fail() { echo "FAIL $*" >&2; exit 1; }
# expect WHAT JQ-FILTER JSON: the filter must hold on the answer.
expect() { jq -e "$2" >/dev/null <<<"$3" || fail "$1: expect $2 of $3"; }
# refused WHAT CODE COMMAND...: the call fails with CODE, whose message does not repeat it.
refused() {
  local what=$1 code=$2 out
  shift 2
  if out=$("$@" 2>&1); then fail "$what: expect $code, got success"; fi
  [[ $out == *"($code)"* || $out == *"(AWS.SimpleQueueService.$code)"* ]] || fail "$what: expect $code, got $out"
  [[ ${out#*operation: } != *"$code"* ]] || fail "$what: the message repeats the code: $out"
}

dlq=$(sqs create-queue --queue-name "$run-dlq" | jq -r .QueueUrl)
dlq_arn=$(sqs get-queue-attributes --queue-url "$dlq" --attribute-names QueueArn | jq -r .Attributes.QueueArn)
policy="{\"deadLetterTargetArn\": \"$dlq_arn\", \"maxReceiveCount\": \"5\"}"
main=$(sqs create-queue --queue-name "$run-main" --attributes "$(jq -nc --arg p "$policy" '{VisibilityTimeout: "30", RedrivePolicy: $p}')" | jq -r .QueueUrl)
again=$(sqs create-queue --queue-name "$run-main" --attributes "$(jq -nc --arg p "$(jq -c . <<<"$policy")" '{VisibilityTimeout: "30", RedrivePolicy: $p}')" | jq -r .QueueUrl)
[[ $again == "$main" ]] || fail "create again with the policy spelled otherwise: expect $main, got $again"
expect "redrive policy" '.Attributes.RedrivePolicy | fromjson | .maxReceiveCount == 5' "$(sqs get-queue-attributes --queue-url "$main" --attribute-names All)"
expect "list queues" '.QueueUrls | length == 2' "$(sqs list-queues --queue-name-prefix "$run")"
ok "a queue with a dead-letter queue; CreateQueue idempotent across JSON spellings"

entries='[{"Id":"e0","MessageBody":"body 0","MessageAttributes":{"n":{"DataType":"Number","StringValue":"0"}}},{"Id":"e1","MessageBody":"body 1 ✓"},{"Id":"e2","MessageBody":"body 2","DelaySeconds":0}]'
expect "send batch" '(.Successful | length == 3) and ((.Failed // []) | length == 0)' "$(sqs send-message-batch --queue-url "$main" --entries "$entries")"
msgs=$(sqs receive-message --queue-url "$main" --max-number-of-messages 10 --visibility-timeout 0 --attribute-names All --message-attribute-names All)
expect "receive the batch" '[.Messages[].Body] | sort == ["body 0","body 1 ✓","body 2"]' "$msgs"
expect "message attributes" '[.Messages[] | select(.Body == "body 0") | .MessageAttributes.n.StringValue] == ["0"]' "$msgs"
ok "batch send with attributes; receive with an explicit visibility timeout of 0"

one=$(sqs receive-message --queue-url "$main" --visibility-timeout 60)
handle=$(jq -r '.Messages[0].ReceiptHandle' <<<"$one")
expect "the others stay visible" '.Messages | length == 2' "$(sqs receive-message --queue-url "$main" --max-number-of-messages 10 --visibility-timeout 0)"
sqs change-message-visibility --queue-url "$main" --receipt-handle "$handle" --visibility-timeout 0
expect "visible again" '.Messages | length == 3' "$(sqs receive-message --queue-url "$main" --max-number-of-messages 10 --visibility-timeout 0)"
ok "visibility: hidden after a receive, back after change-message-visibility 0"

sqs purge-queue --queue-url "$main"
[[ -z $(sqs receive-message --queue-url "$main" --max-number-of-messages 10) ]] || fail "purge: expect an empty queue"
sqs send-message --queue-url "$main" --message-body poison >/dev/null
for _ in 1 2 3 4 5; do
  expect "receive poison" '.Messages | length == 1' "$(sqs receive-message --queue-url "$main" --visibility-timeout 0)"
done
[[ -z $(sqs receive-message --queue-url "$main") ]] || fail "redrive: the sixth receive should move the message"
dead=$(sqs receive-message --queue-url "$dlq" --attribute-names All --visibility-timeout 0)
expect "dead-lettered" '.Messages[0].Body == "poison" and (.Messages[0].Attributes.DeadLetterQueueSourceArn | endswith("-main"))' "$dead"
ok "purge; redrive after maxReceiveCount with DeadLetterQueueSourceArn"

if "$AWS" sqs start-message-move-task --generate-cli-skeleton >/dev/null 2>&1; then
  sqs start-message-move-task --source-arn "$dlq_arn" >/dev/null
  for _ in $(seq 50); do
    status=$(sqs list-message-move-tasks --source-arn "$dlq_arn" | jq -r '.Results[0].Status')
    [[ $status == COMPLETED ]] && break
    sleep 0.1
  done
  [[ $status == COMPLETED ]] || fail "move task: expect COMPLETED, got $status"
  expect "moved back" '[.Messages[].Body] == ["poison"]' "$(sqs receive-message --queue-url "$main")"
  ok "message move task back to the source queue"
else
  echo "SKIP message move tasks: $("$AWS" --version 2>&1 | cut -d' ' -f1) has no start-message-move-task command (the AWS CLI gained it in mid-2023)"
fi

fifo=$(sqs create-queue --queue-name "$run-orders.fifo" --attributes FifoQueue=true,DeduplicationScope=queue,FifoThroughputLimit=perQueue | jq -r .QueueUrl)
for gb in a:a1 b:b1 a:a2 a:a2; do
  sqs send-message --queue-url "$fifo" --message-group-id "${gb%%:*}" --message-deduplication-id "${gb#*:}" --message-body "${gb#*:}" >/dev/null
done
first=$(sqs receive-message --queue-url "$fifo")
expect "FIFO head" '.Messages[0].Body == "a1"' "$first"
expect "group a locked" '[.Messages[].Body] == ["b1"]' "$(sqs receive-message --queue-url "$fifo" --max-number-of-messages 10)"
sqs delete-message --queue-url "$fifo" --receipt-handle "$(jq -r '.Messages[0].ReceiptHandle' <<<"$first")"
expect "a2 once" '[.Messages[].Body] == ["a2"]' "$(sqs receive-message --queue-url "$fifo" --max-number-of-messages 10)"
refused "FIFO batch entry without a group" MissingParameter sqs send-message-batch --queue-url "$fifo" --entries '[{"Id":"x","MessageBody":"x","MessageDeduplicationId":"x"}]'
ok "FIFO order per group, group lock, deduplication; a batch without a group refused whole"

sqs tag-queue --queue-url "$main" --tags team=payments,env=ci
sqs untag-queue --queue-url "$main" --tag-keys env
expect "tags" '.Tags == {"team":"payments"}' "$(sqs list-queue-tags --queue-url "$main")"
refused "reserved tag" InvalidParameterValue sqs tag-queue --queue-url "$main" --tags aws:x=1
ok "tags"

sqs set-queue-attributes --queue-url "$main" --attributes DelaySeconds=5,MessageRetentionPeriod=3600
expect "attributes" '.Attributes.DelaySeconds == "5" and .Attributes.MessageRetentionPeriod == "3600"' "$(sqs get-queue-attributes --queue-url "$main" --attribute-names All)"
sqs send-message --queue-url "$main" --message-body now --delay-seconds 0 >/dev/null
expect "an explicit delay of 0 beats the queue's" '[.Messages[].Body] == ["now"]' "$(sqs receive-message --queue-url "$main")"
refused "visibility out of range" InvalidAttributeValue sqs set-queue-attributes --queue-url "$main" --attributes VisibilityTimeout=99999
ok "queue attributes; an explicit DelaySeconds 0"

for q in "$main" "$dlq" "$fifo"; do sqs delete-queue --queue-url "$q"; done
[[ -z $(sqs list-queues --queue-name-prefix "$run") ]] || fail "queues left after delete"
ok "delete the queues"
echo "cli workload ($("$AWS" --version 2>&1 | cut -d' ' -f1)): $steps steps passed"
