// Drives `oomlens mcp` through the reference MCP client of the TypeScript SDK, as a coding agent
// would: the handshake, tools/list, every tool called on the project's own fixtures (tests/data)
// with its structuredContent checked against the tool's outputSchema (by the SDK's client, which
// validates once tools/list has been read, and again here with Ajv in strict mode), the story of
// an OOM told through MCP alone, and the errors for bad input.
//
// Run: OOMLENS_BINARY=build/release/app/oomlens node --test tests/mcp   (ctest runs it as mcp/sdk_client)

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createInterface } from "node:readline";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import Ajv from "ajv";

const here = dirname(fileURLToPath(import.meta.url));
const data = join(here, "..", "data");
const scenario = (name) => join(data, "scenarios", name);
const binary = process.env.OOMLENS_BINARY;
if (!binary || !existsSync(binary))
    throw new Error(`OOMLENS_BINARY must name the built oomlens (got '${binary ?? ""}')`);

// The calls that exercise every tool; each result must match that tool's outputSchema.
const snapshot = scenario("first_backward.pickle");
const traceback = scenario("first_backward.oom.txt");
const scratch = mkdtempSync(join(tmpdir(), "oomlens-mcp-"));
const everyTool = {
    diagnose: { inputs: [snapshot, traceback] },
    live_at: { input: snapshot, at: "oom", top: 10 },
    evidence: { inputs: [snapshot, traceback], top: 3 },
    step_peaks: { input: scenario("leak.pickle") },
    stack_history: { input: scenario("leak.pickle"), site: ".py:" , limit: 5 },
    compare: { a: join(data, "compare", "batch.a.pickle"), b: join(data, "compare", "batch.b.pickle") },
    plan: { model: "llama-2-7b", batch: 2, seq: 2048, zero: 3, gpus: 8, card: "80GB" },
    report: { inputs: [snapshot, traceback], output: join(scratch, "report.html") },
};

let client;
let tools;
const stderrLines = [];

before(async () => {
    const transport = new StdioClientTransport({ command: binary, args: ["mcp"], stderr: "pipe" });
    transport.stderr?.on("data", (chunk) => stderrLines.push(chunk.toString()));
    client = new Client({ name: "oomlens-tests", version: "1.0.0" });
    await client.connect(transport);
    tools = (await client.listTools()).tools;
});

after(async () => {
    await client?.close();
    rmSync(scratch, { recursive: true, force: true });
});

describe("handshake", () => {
    test("the server names itself and offers tools", () => {
        assert.equal(client.getServerVersion().name, "oomlens");
        assert.ok(client.getServerCapabilities().tools, "tools capability");
        assert.match(client.getInstructions() ?? "", /diagnose/);
    });

    test("ping", async () => {
        assert.deepEqual(await client.ping(), {});
    });

    test("tools/list: every tool with an input and an output schema", () => {
        assert.deepEqual(tools.map((t) => t.name).sort(), Object.keys(everyTool).sort());
        for (const tool of tools) {
            assert.equal(tool.inputSchema.type, "object", tool.name);
            assert.equal(tool.outputSchema?.type, "object", tool.name);
            assert.ok(tool.description.length > 40, tool.name);
        }
    });
});

describe("every tool's result matches its outputSchema", () => {
    const ajv = new Ajv({ strict: true, allowUnionTypes: true, allErrors: true });
    for (const [name, args] of Object.entries(everyTool)) {
        test(name, async () => {
            const tool = tools.find((t) => t.name === name);
            const validate = ajv.compile(tool.outputSchema);
            // The SDK's client throws if structuredContent does not match the outputSchema it read.
            const result = await client.callTool({ name, arguments: args });
            assert.equal(result.isError, false, result.content?.[0]?.text);
            assert.ok(validate(result.structuredContent), ajv.errorsText(validate.errors));
            // Also valid against the input schema we advertise.
            const validateInput = ajv.compile(tool.inputSchema);
            assert.ok(validateInput(args), ajv.errorsText(validateInput.errors));
            // A summary for a reader, then the same result as JSON text for clients that read only text.
            assert.equal(result.content[0].type, "text");
            assert.ok(result.content[0].text.length > 0);
            assert.deepEqual(JSON.parse(result.content[1].text), result.structuredContent);
        });
    }

    test("plan at cluster scale and for serving", async () => {
        const tool = tools.find((t) => t.name === "plan");
        const validate = ajv.compile(tool.outputSchema);
        for (const args of [
            { model: "llama-2-70b", tp: 8, pp: 4, gpus: 8, nodes: 4, batch: 1, seq: 4096, card: "80GB",
              sequence_parallel: true, distributed_optimizer: true },
            { model: "llama-2-7b", inference: true, batch: 16, seq: 4096, card: "80GB", kv_dtype: "fp8" },
        ]) {
            const result = await client.callTool({ name: "plan", arguments: args });
            assert.equal(result.isError, false, result.content?.[0]?.text);
            assert.ok(validate(result.structuredContent), ajv.errorsText(validate.errors));
        }
    });

    test("the SDK's client really validates structuredContent", async () => {
        // A client that believes live_at promises a key the server never sends must refuse the result.
        const transport = new StdioClientTransport({ command: binary, args: ["mcp"], stderr: "ignore" });
        const strict = new Client({ name: "oomlens-tests-strict", version: "1.0.0" });
        await strict.connect(transport);
        try {
            await strict.listTools();
            const validator = strict.getToolOutputValidator("live_at");
            assert.ok(validator, "the client compiled live_at's outputSchema");
            assert.equal(validator({ input: "x" }).valid, false);
            const result = await strict.callTool({ name: "live_at", arguments: everyTool.live_at });
            assert.equal(validator(result.structuredContent).valid, true);
        } finally {
            await strict.close();
        }
    });
});

describe("an OOM through MCP alone", () => {
    test("diagnosis, the live allocations at the OOM with their stacks, and the fix", async () => {
        const diagnosis = (await client.callTool({ name: "diagnose", arguments: everyTool.diagnose }))
            .structuredContent;
        assert.equal(diagnosis.tool, "oomlens");
        const top = diagnosis.diagnoses[0];
        assert.equal(top.id, "first_backward");
        assert.ok(top.fixes.length > 0 && top.fixes[0].title.length > 0, "a fix");
        assert.equal(diagnosis.oom_messages.length, 1);

        const live = (await client.callTool({ name: "live_at", arguments: { input: snapshot, at: "oom", top: 5 } }))
            .structuredContent;
        assert.equal(live.moment.phase, "backward");
        assert.ok(live.oom.requested_bytes > 0);
        assert.equal(live.allocations.length, 5);
        for (let i = 1; i < live.allocations.length; ++i)
            assert.ok(live.allocations[i - 1].bytes >= live.allocations[i].bytes, "largest first");
        const withStack = live.allocations.filter((a) => a.stack.length > 0);
        assert.ok(withStack.length > 0, "stacks");
        for (const a of withStack)
            for (const frame of a.stack) assert.match(frame, /^.+:\d+:.+$/, "file:line:function");
        const sum = Object.values(live.live_bytes_by_category).reduce((x, y) => x + y, 0);
        assert.equal(sum, live.live_bytes);

        // The same snapshot was decoded once: the server said so in no output, but live_at and
        // diagnose agree on the OOM's live bytes.
        assert.equal(diagnosis.snapshots.length, 1);
    });
});

describe("long calls and the protocol's edges", () => {
    test("progress notifications while a call reads its case", async () => {
        const seen = [];
        const result = await client.callTool(
            { name: "diagnose", arguments: { inputs: [join(data, "job")] } }, CallToolResultSchema,
            { onprogress: (progress) => seen.push(progress) });
        assert.equal(result.isError, false, result.content?.[0]?.text);
        // The SDK hands notifications to their handlers a microtask late, and forgets the token
        // when the answer arrives: the last ones may be dropped when they share a read with it.
        // tst_mcpserver checks that they reach the total.
        assert.ok(seen.length >= 2, `progress notifications: ${seen.length}`);
        for (let i = 1; i < seen.length; ++i) assert.ok(seen[i].progress > seen[i - 1].progress, "increasing");
        for (const progress of seen) assert.ok(progress.progress <= progress.total && progress.message.length > 0);
    });

    test("an unknown cursor is invalid params", async () => {
        await assert.rejects(client.listTools({ cursor: "no-such-page" }), (error) => {
            assert.ok(error instanceof McpError);
            assert.equal(error.code, -32602);
            return true;
        });
    });

    test("input schemas give one type per field", () => {
        const types = (schema, out) => {
            if (Array.isArray(schema)) schema.forEach((item) => types(item, out));
            else if (schema && typeof schema === "object")
                for (const [key, value] of Object.entries(schema)) {
                    if (key === "type") out.push(value);
                    else if (key === "anyOf" || key === "oneOf") out.push("union");
                    if (key !== "enum" && key !== "required") types(value, out);
                }
            return out;
        };
        for (const tool of tools) {
            for (const type of types(tool.inputSchema, [])) assert.equal(typeof type, "string", tool.name);
            assert.ok(!types(tool.inputSchema, []).includes("union"), tool.name);
            for (const type of types(tool.outputSchema, [])) assert.equal(typeof type, "string", tool.name);
        }
    });

    // Raw JSON-RPC, as no SDK would write it: calls before initialize, a message nested 50,000 deep,
    // a 10 MB bad token. Each is one error and the next line is answered.
    test("hostile lines: one error each, the server serves on", async () => {
        const server = spawn(binary, ["mcp"], { stdio: ["pipe", "pipe", "ignore"] });
        const answers = [];
        const lines = createInterface({ input: server.stdout });
        lines.on("line", (line) => answers.push(line));
        const deep = `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"a":${"[".repeat(50000)}${"]".repeat(50000)}}}`;
        server.stdin.write(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n`);
        server.stdin.write(deep + "\n");
        server.stdin.write(`{"jsonrpc":"2.0","id":3,"method":"${"a".repeat(10 * 1024 * 1024)}\n`);
        server.stdin.write(`{"jsonrpc":"2.0","id":4,"method":"ping"}\n`);
        server.stdin.end();
        await new Promise((resolve) => server.on("close", resolve));
        assert.equal(answers.length, 4);
        const parsed = answers.map((line) => JSON.parse(line));
        assert.equal(parsed[0].error.code, -32600); // before initialize
        assert.equal(parsed[1].error.code, -32600); // too deep
        assert.equal(parsed[2].error.code, -32700); // the bad token, quoted briefly
        assert.ok(answers[2].length < 1024, `a ${answers[2].length}-byte answer`);
        assert.deepEqual(parsed[3], { jsonrpc: "2.0", id: 4, result: {} });
    });
});

describe("errors", () => {
    test("a file that cannot be read is a tool error naming it", async () => {
        const result = await client.callTool({ name: "diagnose", arguments: { inputs: ["/nonexistent/run.pickle"] } });
        assert.equal(result.isError, true);
        assert.equal(result.structuredContent, undefined);
        assert.match(result.content[0].text, /^oomlens: \/nonexistent\/run\.pickle: /);
    });

    test("a bad argument is a tool error the agent can act on", async () => {
        const result = await client.callTool({ name: "plan", arguments: { model: "gpt2", batch: "many" } });
        assert.equal(result.isError, true);
        // The tool's own words: its argument, not the command-line flag behind it.
        assert.equal(result.content[0].text, "plan: \"batch\" needs a number, got 'many'");
        const noOom = await client.callTool({ name: "live_at", arguments: { input: scenario("healthy.pickle"), at: "oom" } });
        assert.equal(noOom.isError, true);
        assert.match(noOom.content[0].text, /has no OOM event/);
    });

    test("an unknown tool is a JSON-RPC error", async () => {
        await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }), (error) => {
            assert.ok(error instanceof McpError);
            assert.equal(error.code, -32602);
            return true;
        });
    });

    test("the report was written where asked", () => {
        assert.ok(statSync(everyTool.report.output).size > 10000);
    });

    test("the server still answers after all of it, and logged only to stderr", async () => {
        assert.deepEqual(await client.ping(), {});
        assert.match(stderrLines.join(""), /oomlens mcp/);
    });
});
