// A workload of the AWS SDK for JavaScript v3 against cmd/sqsfake: queues
// with a dead-letter queue, batches, attributes, FIFO groups and
// deduplication, visibility, purge, tags and message move tasks. It fails
// (exit 1) on the first step whose answer is not SQS's.
//
//	node workload.mjs http://127.0.0.1:9324
import assert from "node:assert/strict";
import {
  SQSClient, CreateQueueCommand, GetQueueAttributesCommand, SetQueueAttributesCommand,
  SendMessageCommand, SendMessageBatchCommand, ReceiveMessageCommand, DeleteMessageCommand,
  DeleteMessageBatchCommand, ChangeMessageVisibilityCommand, PurgeQueueCommand, TagQueueCommand,
  UntagQueueCommand, ListQueueTagsCommand, StartMessageMoveTaskCommand, ListMessageMoveTasksCommand,
  ListQueuesCommand, DeleteQueueCommand, GetQueueUrlCommand,
} from "@aws-sdk/client-sqs";

const endpoint = process.argv[2];
if (!endpoint) {
  console.error("usage: node workload.mjs ENDPOINT");
  process.exit(2);
}
const sqs = new SQSClient({ endpoint, region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } });
const run = `js${Date.now().toString(36)}`;
let steps = 0;

async function step(name, fn) {
  try {
    await fn();
    steps++;
    console.log(`ok   ${name}`);
  } catch (err) {
    console.error(`FAIL ${name}: ${err.stack || err}`);
    process.exit(1);
  }
}

async function refused(promise, code) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err.name === code || err.Code === code || String(err.name).endsWith(code), `expect ${code}, got ${err.name}: ${err.message}`);
    assert.ok(!String(err.message).includes(code), `the message repeats the code: ${err.message}`);
    return;
  }
  assert.fail(`expect ${code}, got success`);
}

const create = async (name, Attributes) => (await sqs.send(new CreateQueueCommand({ QueueName: `${run}-${name}`, Attributes }))).QueueUrl;
const attrs = async (QueueUrl, names = ["All"]) => (await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: names }))).Attributes;
const receive = async (QueueUrl, extra = {}) =>
  (await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, MessageAttributeNames: ["All"], MessageSystemAttributeNames: ["All"], ...extra }))).Messages ?? [];

let dlq, dlqArn, main, fifo;

await step("create a dead-letter queue and a queue that redrives to it", async () => {
  dlq = await create("dlq");
  dlqArn = (await attrs(dlq, ["QueueArn"])).QueueArn;
  main = await create("main", { VisibilityTimeout: "30", RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: "5" }) });
  const a = await attrs(main);
  assert.equal(JSON.parse(a.RedrivePolicy).maxReceiveCount, 5);
  // Creating it again with the same attributes, spelled differently, is the same queue.
  const again = await create("main", { VisibilityTimeout: "30", RedrivePolicy: JSON.stringify({ maxReceiveCount: 5, deadLetterTargetArn: dlqArn }) });
  assert.equal(again, main);
  const listed = (await sqs.send(new ListQueuesCommand({ QueueNamePrefix: run }))).QueueUrls;
  assert.equal(listed.length, 2);
  assert.equal((await sqs.send(new GetQueueUrlCommand({ QueueName: `${run}-main` }))).QueueUrl, main);
});

await step("batch send with message attributes, receive them with their digests", async () => {
  const out = await sqs.send(new SendMessageBatchCommand({
    QueueUrl: main,
    Entries: [0, 1, 2].map((i) => ({ Id: `e${i}`, MessageBody: `body ${i} ✓`, DelaySeconds: 0, MessageAttributes: { n: { DataType: "Number", StringValue: String(i) }, s: { DataType: "String", StringValue: "x" } } })),
  }));
  assert.equal(out.Successful.length, 3);
  assert.equal((out.Failed ?? []).length, 0);
  const msgs = await receive(main, { VisibilityTimeout: 0 }); // an explicit 0: they stay visible
  assert.deepEqual(msgs.map((m) => m.Body).sort(), ["body 0 ✓", "body 1 ✓", "body 2 ✓"]);
  assert.equal(msgs[0].MessageAttributes.s.StringValue, "x");
  assert.equal(msgs[0].Attributes.ApproximateReceiveCount, "1");
});

await step("visibility: hidden after a receive, back after ChangeMessageVisibility 0", async () => {
  const [m] = await receive(main, { MaxNumberOfMessages: 1, VisibilityTimeout: 60 });
  assert.ok(m);
  const before = (await receive(main, { VisibilityTimeout: 0 })).length;
  assert.equal(before, 2);
  await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: main, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 }));
  const after = await receive(main, { VisibilityTimeout: 0 });
  assert.equal(after.length, 3);
});

await step("redrive: a message received more than maxReceiveCount times moves to the dead-letter queue", async () => {
  await sqs.send(new PurgeQueueCommand({ QueueUrl: main }));
  assert.equal((await receive(main)).length, 0);
  await sqs.send(new SendMessageCommand({ QueueUrl: main, MessageBody: "poison" }));
  for (let i = 0; i < 5; i++) assert.equal((await receive(main, { VisibilityTimeout: 0 })).length, 1);
  assert.equal((await receive(main)).length, 0); // the sixth receive moves it
  const dead = await receive(dlq);
  assert.equal(dead.length, 1);
  assert.equal(dead[0].Body, "poison");
  assert.equal(dead[0].Attributes.DeadLetterQueueSourceArn, (await attrs(main, ["QueueArn"])).QueueArn);
  await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: dlq, ReceiptHandle: dead[0].ReceiptHandle, VisibilityTimeout: 0 }));
});

await step("message move task: redrive the dead-letter queue back to its source", async () => {
  const { TaskHandle } = await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: dlqArn }));
  assert.ok(TaskHandle);
  let done = false;
  for (let i = 0; i < 50 && !done; i++) {
    const { Results } = await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn }));
    done = Results[0].Status === "COMPLETED";
    if (!done) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(done, "the move task completes");
  const back = await receive(main);
  assert.deepEqual(back.map((m) => m.Body), ["poison"]);
  await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: main, Entries: back.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })) }));
});

await step("FIFO: order per group, group lock, deduplication", async () => {
  fifo = await create("orders.fifo", { FifoQueue: "true", DeduplicationScope: "queue", FifoThroughputLimit: "perQueue" });
  for (const [g, b] of [["a", "a1"], ["b", "b1"], ["a", "a2"], ["a", "a2"]]) {
    await sqs.send(new SendMessageCommand({ QueueUrl: fifo, MessageBody: b, MessageGroupId: g, MessageDeduplicationId: b, DelaySeconds: 0 }));
  }
  const first = await receive(fifo, { MaxNumberOfMessages: 1 });
  assert.equal(first[0].Body, "a1");
  const rest = await receive(fifo);
  assert.deepEqual(rest.map((m) => m.Body), ["b1"]); // group a is locked while a1 is in flight
  await sqs.send(new DeleteMessageCommand({ QueueUrl: fifo, ReceiptHandle: first[0].ReceiptHandle }));
  const next = await receive(fifo);
  assert.deepEqual(next.map((m) => m.Body), ["a2"]); // a2 sent twice, delivered once
  await refused(sqs.send(new SendMessageBatchCommand({ QueueUrl: fifo, Entries: [{ Id: "x", MessageBody: "no group", MessageDeduplicationId: "x" }] })), "MissingParameter");
});

await step("tags: tag, untag, list; limits", async () => {
  await sqs.send(new TagQueueCommand({ QueueUrl: main, Tags: { team: "payments", env: "ci" } }));
  await sqs.send(new UntagQueueCommand({ QueueUrl: main, TagKeys: ["env"] }));
  assert.deepEqual((await sqs.send(new ListQueueTagsCommand({ QueueUrl: main }))).Tags, { team: "payments" });
  await refused(sqs.send(new TagQueueCommand({ QueueUrl: main, Tags: { "aws:reserved": "x" } })), "InvalidParameterValue");
});

await step("queue attributes: set, read, refuse out of range", async () => {
  await sqs.send(new SetQueueAttributesCommand({ QueueUrl: main, Attributes: { DelaySeconds: "5", MessageRetentionPeriod: "3600" } }));
  const a = await attrs(main);
  assert.equal(a.DelaySeconds, "5");
  assert.equal(a.MessageRetentionPeriod, "3600");
  // DelaySeconds 0 on the message overrides the queue's 5 s.
  await sqs.send(new SendMessageCommand({ QueueUrl: main, MessageBody: "now", DelaySeconds: 0 }));
  assert.deepEqual((await receive(main)).map((m) => m.Body), ["now"]);
  await refused(sqs.send(new SetQueueAttributesCommand({ QueueUrl: main, Attributes: { VisibilityTimeout: "99999" } })), "InvalidAttributeValue");
});

await step("delete the queues", async () => {
  for (const QueueUrl of [main, dlq, fifo]) await sqs.send(new DeleteQueueCommand({ QueueUrl }));
  assert.equal(((await sqs.send(new ListQueuesCommand({ QueueNamePrefix: run }))).QueueUrls ?? []).length, 0);
});

console.log(`js workload: ${steps} steps passed`);
