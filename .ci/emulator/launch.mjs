// Starts the fauxqs SQS emulator for sqskit's tests: loopback only, a free
// port, no request logging. Prints "listening <url>" once ready and exits when
// stdin closes, so the emulator never outlives the test process that started it.
import { buildApp } from "fauxqs";

const app = buildApp({ logger: false, host: "localhost" });
const address = await app.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`listening ${address}\n`);

const stop = () => app.close().finally(() => process.exit(0));
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.on("SIGTERM", stop);
process.stdin.resume();
