// Starts the dynalite DynamoDB emulator for the tests of idempotency/dynamodb:
// loopback only, a free port, in memory, tables ready at once. Prints
// "listening <url>" once ready and exits when stdin closes, so the emulator
// never outlives the test process that started it.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const dynalite = require("dynalite");

const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening http://127.0.0.1:${server.address().port}\n`);
});

const stop = () => server.close(() => process.exit(0));
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.on("SIGTERM", stop);
process.stdin.resume();
