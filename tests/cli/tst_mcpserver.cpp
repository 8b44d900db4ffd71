#include "app/cli/inputs.h"
#include "app/cli/plancommand.h"
#include "app/mcp/mcpserver.h"
#include "app/mcp/tool.h"
#include "common/clirun.h"
#include "common/testutil.h"
#include "core/analysis/livequery.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/planner/planjson.h"

#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <map>

// QCOMPARE cannot take nlohmann's json (Qt's qfloat16 overload asks json about an incomplete type):
// both sides as json, shown as JSON text when they differ.
#define JSON_COMPARE(actual, expected)                                                                                 \
    do {                                                                                                               \
        const oomlens::mcp::Json actualJson_ = (actual);                                                               \
        const oomlens::mcp::Json expectedJson_ = (expected);                                                           \
        if (!(actualJson_ == expectedJson_))                                                                           \
            QFAIL(qPrintable(                                                                                          \
                QStringLiteral("%1\n   Actual: %2\n   Expected: %3")                                                   \
                    .arg(QStringLiteral(#actual), QString::fromStdString(actualJson_.dump().substr(0, 2000)),          \
                        QString::fromStdString(expectedJson_.dump().substr(0, 2000)))));                               \
    } while (false)

// `oomlens mcp`, the Model Context Protocol server: the JSON-RPC and MCP lifecycle rules, every
// tool's answer against the code the CLI answers with, the errors an agent gets for bad input,
// the bounded case cache, and a plain stdio exchange with the built binary.
// (tests/mcp drives the same server through the reference TypeScript SDK client.)
class TestMcpServer : public QObject
{
    Q_OBJECT

    using Json = oomlens::mcp::Json;

    static std::string scenario(const char* name)
    {
        return QString(oomlens::test::testDataDir() + QStringLiteral("/scenarios/") + QString::fromLatin1(name))
            .toStdString();
    }

    static Json message(oomlens::mcp::McpServer& server, const Json& request)
    {
        const std::optional<std::string> answer = server.handleLine(request.dump());
        if (!answer)
            qFatal("no answer to %s", request.dump().c_str());
        return Json::parse(*answer);
    }

    static Json request(int id, const std::string& method, const Json& params = Json::object())
    {
        return Json { { "jsonrpc", "2.0" }, { "id", id }, { "method", method }, { "params", params } };
    }

    // The lifecycle's first step, which every other call waits for.
    static void handshake(oomlens::mcp::McpServer& server)
    {
        const Json answer = message(server,
            request(0, "initialize",
                { { "protocolVersion", "2025-06-18" }, { "capabilities", Json::object() },
                    { "clientInfo", { { "name", "tst_mcpserver" }, { "version", "1" } } } }));
        if (!answer.contains("result"))
            qFatal("initialize failed: %s", answer.dump().c_str());
        QVERIFY(!server.handleLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
    }

    // Every "type" in a schema, wherever it is nested.
    static void collectTypes(const Json& node, std::vector<Json>& types, int& unions)
    {
        if (node.is_array()) {
            for (const Json& item : node)
                collectTypes(item, types, unions);
            return;
        }
        if (!node.is_object())
            return;
        for (const auto& [key, value] : node.items()) {
            if (key == "type")
                types.push_back(value);
            else if (key == "anyOf" || key == "oneOf")
                ++unions;
            if (key != "enum" && key != "required")
                collectTypes(value, types, unions);
        }
    }

    // tools/call's result object.
    static Json call(oomlens::mcp::McpServer& server, const std::string& tool, const Json& arguments)
    {
        const Json answer = message(server, request(7, "tools/call", { { "name", tool }, { "arguments", arguments } }));
        if (!answer.contains("result"))
            qFatal("tools/call %s: %s", tool.c_str(), answer.dump().c_str());
        return answer["result"];
    }

    // A successful call's structuredContent; stops the test with the error text otherwise.
    static Json structured(oomlens::mcp::McpServer& server, const std::string& tool, const Json& arguments)
    {
        const Json result = call(server, tool, arguments);
        if (result["isError"].get<bool>())
            qFatal("%s failed: %s", tool.c_str(), result["content"][0]["text"].get<std::string>().c_str());
        return result["structuredContent"];
    }

    static std::string errorText(oomlens::mcp::McpServer& server, const std::string& tool, const Json& arguments)
    {
        const Json result = call(server, tool, arguments);
        if (!result["isError"].get<bool>())
            qFatal("%s did not fail", tool.c_str());
        if (result.contains("structuredContent"))
            qFatal("%s: an error carries no structuredContent", tool.c_str());
        return result["content"][0]["text"].get<std::string>();
    }

private Q_SLOTS:
    void initializeNegotiatesTheVersion()
    {
        oomlens::mcp::McpServer server;
        for (const char* version : { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" }) {
            const Json answer = message(server, request(1, "initialize", { { "protocolVersion", version } }));
            JSON_COMPARE(answer["jsonrpc"], "2.0");
            JSON_COMPARE(answer["id"], 1);
            JSON_COMPARE(answer["result"]["protocolVersion"].get<std::string>(), std::string(version));
            JSON_COMPARE(answer["result"]["serverInfo"]["name"], "oomlens");
            QVERIFY(answer["result"]["capabilities"].contains("tools"));
        }
        // A version we do not speak: the newest we do; the client decides whether to go on.
        const Json future = message(server, request(2, "initialize", { { "protocolVersion", "2099-01-01" } }));
        JSON_COMPARE(future["result"]["protocolVersion"], "2025-11-25");
        // The id comes back as it was sent, a string included.
        Json ping = request(3, "ping");
        ping["id"] = "abc";
        JSON_COMPARE(
            message(server, ping), (Json { { "jsonrpc", "2.0" }, { "id", "abc" }, { "result", Json::object() } }));
    }

    void notificationsAndResponsesGetNoAnswer()
    {
        oomlens::mcp::McpServer server;
        QVERIFY(!server.handleLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
        QVERIFY(!server.handleLine(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})"));
        QVERIFY(!server.handleLine(R"({"jsonrpc":"2.0","id":5,"result":{}})"));
        QVERIFY(!server.handleLine(""));
        QVERIFY(!server.handleLine("   \r"));
    }

    void protocolErrors()
    {
        oomlens::mcp::McpServer server;
        handshake(server);
        const auto errorOf = [&](const std::string& line) {
            const std::optional<std::string> answer = server.handleLine(line);
            if (!answer)
                qFatal("no answer to %s", line.c_str());
            const Json parsed = Json::parse(*answer);
            if (!parsed.contains("error") || parsed.contains("result"))
                qFatal("not an error: %s", answer->c_str());
            return parsed;
        };
        Json error = errorOf("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
        JSON_COMPARE(error["error"]["code"], -32700);
        QVERIFY(error["id"].is_null());
        error = errorOf("[]");
        JSON_COMPARE(error["error"]["code"], -32600);
        error = errorOf(R"({"jsonrpc":"1.0","id":4,"method":"ping"})");
        JSON_COMPARE(error["error"]["code"], -32600);
        JSON_COMPARE(error["id"], 4);
        error = errorOf(R"({"jsonrpc":"2.0","id":4,"method":7})");
        JSON_COMPARE(error["error"]["code"], -32600);
        error = errorOf(R"({"jsonrpc":"2.0","id":null,"method":"ping"})");
        JSON_COMPARE(error["error"]["code"], -32600);
        error = errorOf(R"("just a string")");
        JSON_COMPARE(error["error"]["code"], -32600);
        error = errorOf(R"({"jsonrpc":"2.0","id":9,"method":"resources/read"})");
        JSON_COMPARE(error["error"]["code"], -32601);
        JSON_COMPARE(error["id"], 9);
        error = errorOf(R"({"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"no_such_tool"}})");
        JSON_COMPARE(error["error"]["code"], -32602);
        QVERIFY(error["error"]["message"].get<std::string>().find("no_such_tool") != std::string::npos);
        error = errorOf(R"({"jsonrpc":"2.0","id":11,"method":"tools/call","params":{}})");
        JSON_COMPARE(error["error"]["code"], -32602);

        // An old-style batch: each element answered, notifications not.
        const std::optional<std::string> batch = server.handleLine(
            R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},)"
            R"({"jsonrpc":"2.0","id":2,"method":"nope"}])");
        QVERIFY(batch);
        const Json answers = Json::parse(*batch);
        JSON_COMPARE(answers.size(), size_t(2));
        JSON_COMPARE(answers[0]["id"], 1);
        JSON_COMPARE(answers[1]["error"]["code"], -32601);
    }

    void toolsListHasSchemas()
    {
        oomlens::mcp::McpServer server;
        handshake(server);
        const Json answer = message(server, request(1, "tools/list"));
        const Json& tools = answer["result"]["tools"];
        std::vector<std::string> names;
        for (const Json& tool : tools) {
            names.push_back(tool["name"].get<std::string>());
            JSON_COMPARE(tool["inputSchema"]["type"], "object");
            JSON_COMPARE(tool["outputSchema"]["type"], "object");
            QVERIFY(!tool["description"].get<std::string>().empty());
            JSON_COMPARE(tool["annotations"]["readOnlyHint"], tool["name"] != "report");
        }
        for (const char* name :
            { "diagnose", "report", "compare", "plan", "live_at", "evidence", "step_peaks", "stack_history" })
            QVERIFY2(std::find(names.begin(), names.end(), name) != names.end(), name);
        JSON_COMPARE(names.size(), size_t(8));
    }

    void diagnoseIsTheCliDocument()
    {
        const std::string snapshot = scenario("first_backward.pickle");
        const std::string traceback = scenario("first_backward.oom.txt");
        oomlens::mcp::McpServer server;
        handshake(server);
        const Json result = call(server, "diagnose", { { "inputs", { snapshot, traceback } } });
        JSON_COMPARE(result["isError"], false);
        // What `diagnose --json` prints for the same inputs.
        oomlens::Case input;
        JSON_COMPARE(oomlens::cli::loadInputs({ snapshot, traceback }, input), 0);
        const Json expected = oomlens::caseToJson(input, oomlens::analyzeCase(input));
        JSON_COMPARE(result["structuredContent"], expected);
        QVERIFY(!expected["diagnoses"].empty());
        JSON_COMPARE(expected["diagnoses"][0]["id"], "first_backward");
        // The text: a summary naming the diagnosis, then the whole result for clients that read only text.
        const std::string summary = result["content"][0]["text"].get<std::string>();
        QVERIFY2(summary.find("first_backward") != std::string::npos, summary.c_str());
        JSON_COMPARE(Json::parse(result["content"][1]["text"].get<std::string>()), expected);

        // Pasted text is an input like a file.
        const Json pasted = structured(server, "diagnose",
            { { "text", oomlens::test::readFile(QString::fromStdString(traceback)).toStdString() } });
        JSON_COMPARE(pasted["inputs"][0]["path"], "(pasted)");
        JSON_COMPARE(pasted["oom_messages"].size(), size_t(1));
    }

    void badInputIsAToolError()
    {
        oomlens::mcp::McpServer server;
        handshake(server);
        const std::string missing = "/nonexistent/run.pickle";
        const std::string text = errorText(server, "diagnose", { { "inputs", { missing } } });
        // The line `oomlens diagnose` prints on stderr for the same file.
        const oomlens::test::CliRun cli
            = oomlens::test::runOomlens({ QStringLiteral("diagnose"), QString::fromStdString(missing) });
        if (!oomlens::test::oomlensBinary().isEmpty())
            QCOMPARE(QByteArray::fromStdString(text), cli.err.trimmed());
        QVERIFY2(text.starts_with("oomlens: " + missing + ": "), text.c_str());

        QVERIFY(errorText(server, "diagnose", Json::object()).find("give \"inputs\"") != std::string::npos);
        QVERIFY(errorText(server, "diagnose", { { "inputs", "-" } }).find("standard input") != std::string::npos);
        QVERIFY(errorText(server, "diagnose", { { "inputs", { scenario("leak.pickle") } }, { "device", "zero" } })
                    .find("\"device\" must be a whole number")
            != std::string::npos);
        QVERIFY(errorText(server, "diagnose", { { "inputs", { scenario("leak.pickle") } }, { "devise", 0 } })
                    .find("unknown argument \"devise\"")
            != std::string::npos);
        const std::string notSnapshot = scenario("leak.oom.txt");
        JSON_COMPARE(errorText(server, "live_at", { { "input", notSnapshot } }),
            "oomlens: " + notSnapshot + ": not a memory snapshot");
        JSON_COMPARE(errorText(server, "live_at", { { "input", scenario("leak.pickle") }, { "device", 3 } }),
            "oomlens: " + scenario("leak.pickle") + ": the snapshot has no device 3; it holds device 0");
        QVERIFY(errorText(server, "live_at", { { "input", scenario("healthy.pickle") }, { "at", "oom" } })
                    .find("has no OOM event")
            != std::string::npos);
        QVERIFY(errorText(server, "live_at", { { "input", scenario("leak.pickle") }, { "at", "event:99999999" } })
                    .find("event:N needs N from -1 to")
            != std::string::npos);
        QVERIFY(errorText(server, "live_at", { { "input", scenario("leak.pickle") }, { "at", "soon" } })
                    .find("\"at\" is \"peak\", \"oom\"")
            != std::string::npos);
        // Nothing failed for good: the server still answers.
        JSON_COMPARE(message(server, request(1, "ping"))["result"], Json::object());
    }

    void liveAtTheOom()
    {
        const std::string path = scenario("first_backward.pickle");
        oomlens::mcp::McpServer server;
        handshake(server);
        const Json live = structured(server, "live_at", { { "input", path }, { "at", "oom" }, { "top", 5 } });
        oomlens::Case input;
        oomlens::cli::loadInputs({ path }, input);
        const oomlens::CaseAnalysis analysis = oomlens::analyzeCase(input);
        const oomlens::DeviceAnalysis& device = *analysis.snapshots[0].primary();
        const oomlens::OomAnalysis& oom = device.ooms.front();
        JSON_COMPARE(live["moment"]["event"], oom.eventIndex);
        JSON_COMPARE(live["moment"]["phase"], "backward");
        JSON_COMPARE(live["oom"]["requested_bytes"], oom.requestedBytes);
        const std::vector<uint32_t> liveSet = oomlens::liveAllocations(device, oom.eventIndex);
        JSON_COMPARE(live["live_count"], liveSet.size());
        for (int i = 0; i < oomlens::categoryCount; ++i) {
            const auto category = static_cast<oomlens::Category>(i);
            JSON_COMPARE(live["live_bytes_by_category"][std::string(oomlens::categoryName(category))],
                oom.liveByCategory[static_cast<size_t>(i)]);
        }
        const Json& allocations = live["allocations"];
        JSON_COMPARE(allocations.size(), size_t(5));
        uint64_t largest = 0;
        for (uint32_t index : liveSet)
            largest = std::max(largest, device.allocations[index].requestedSize);
        JSON_COMPARE(allocations[0]["bytes"], largest);
        for (size_t i = 1; i < allocations.size(); ++i)
            QVERIFY(allocations[i - 1]["bytes"].get<uint64_t>() >= allocations[i]["bytes"].get<uint64_t>());
        for (const Json& allocation : allocations) {
            const oomlens::Allocation& a = device.allocations[allocation["allocation"].get<uint32_t>()];
            JSON_COMPARE(allocation["bytes"], a.requestedSize);
            JSON_COMPARE(allocation["category"], std::string(oomlens::categoryName(a.category)));
            QVERIFY(a.liveAfter(oom.eventIndex));
        }
        // Stacks as file:line:function; "all" gives at least the user's frames.
        const Json all = structured(server, "live_at", { { "input", path }, { "top", 5 }, { "frames", "all" } });
        JSON_COMPARE(all["at"], "oom"); // the default for a run that failed
        bool anyStack = false;
        for (size_t i = 0; i < allocations.size(); ++i) {
            QVERIFY(all["allocations"][i]["stack"].size() >= allocations[i]["stack"].size());
            for (const Json& frame : allocations[i]["stack"]) {
                anyStack = true;
                const std::string text = frame.get<std::string>();
                QVERIFY2(std::count(text.begin(), text.end(), ':') >= 2, text.c_str());
            }
        }
        QVERIFY(anyStack);

        // The other moments.
        const Json peak = structured(server, "live_at", { { "input", path }, { "at", "peak" }, { "top", 0 } });
        JSON_COMPARE(peak["moment"]["event"], device.peakEvent);
        JSON_COMPARE(peak["live_bytes"], device.peakAllocatedBytes);
        const Json atEvent = structured(server, "live_at", { { "input", path }, { "at", "event:10" } });
        JSON_COMPARE(atEvent["moment"]["event"], 10);
        const Json before = structured(server, "live_at", { { "input", path }, { "at", "event:-1" } });
        JSON_COMPARE(before["live_bytes"], device.initialAllocatedBytes);
        const int64_t time = atEvent["moment"]["time_us"].get<int64_t>();
        const Json atTime
            = structured(server, "live_at", { { "input", path }, { "at", "time_us:" + std::to_string(time) } });
        QVERIFY(atTime["moment"]["event"].get<int64_t>() >= 10);
        JSON_COMPARE(atTime["moment"]["time_us"], time);
    }

    void aSnapshotIsDecodedOnce()
    {
        const std::string snapshot = scenario("leak.pickle");
        oomlens::mcp::McpServer server;
        handshake(server);
        structured(server, "diagnose", { { "inputs", { snapshot, scenario("leak.oom.txt") } } });
        JSON_COMPARE(server.cache().reads(), uint64_t(1));
        // live_at, step_peaks and stack_history on the snapshot read with its traceback: no new read.
        structured(server, "live_at", { { "input", snapshot } });
        structured(server, "step_peaks", { { "input", snapshot } });
        structured(server, "evidence", { { "inputs", { snapshot, scenario("leak.oom.txt") } } });
        JSON_COMPARE(server.cache().reads(), uint64_t(1));
        // Another device is another analysis.
        errorText(server, "live_at", { { "input", snapshot }, { "device", 1 } });
        JSON_COMPARE(server.cache().reads(), uint64_t(2));
    }

    void aJobsFailingRank()
    {
        // A folder of rank files is a job, as for `diagnose`: the job summary, then the failing
        // rank's case, whose snapshot live_at then reads from the cache.
        const std::string job = QString(oomlens::test::testDataDir() + QStringLiteral("/job")).toStdString();
        oomlens::mcp::McpServer server;
        handshake(server);
        const Json diagnosis = structured(server, "diagnose", { { "inputs", { job } } });
        JSON_COMPARE(diagnosis["job"]["failing_rank"], 6);
        JSON_COMPARE(server.cache().reads(), 1);
        const Json live = structured(server, "live_at", { { "input", job + "/rank6.pickle" } });
        JSON_COMPARE(live["at"], "oom");
        JSON_COMPARE(server.cache().reads(), 1);
    }

    void theCacheIsBounded()
    {
        oomlens::mcp::McpServer server(2);
        handshake(server);
        for (const char* name : { "leak.pickle", "fragmentation.pickle", "other_process.pickle", "leak.pickle" })
            structured(server, "step_peaks", { { "input", scenario(name) } });
        JSON_COMPARE(server.cache().size(), size_t(2));
        JSON_COMPARE(server.cache().reads(), uint64_t(4)); // leak.pickle had been evicted
        structured(server, "live_at", { { "input", scenario("leak.pickle") } });
        JSON_COMPARE(server.cache().reads(), uint64_t(4));
        // A case with an unreadable input is not kept.
        errorText(server, "diagnose", { { "inputs", { scenario("leak.pickle"), "/nonexistent/x.txt" } } });
        errorText(server, "diagnose", { { "inputs", { scenario("leak.pickle"), "/nonexistent/x.txt" } } });
        JSON_COMPARE(server.cache().reads(), uint64_t(6));
        JSON_COMPARE(server.cache().size(), size_t(2));

        // A file changed on disk is read again, not answered from the cache.
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString copy = dir.filePath(QStringLiteral("run.pickle"));
        QVERIFY(QFile::copy(QString::fromStdString(scenario("leak.pickle")), copy));
        const Json before = structured(server, "step_peaks", { { "input", copy.toStdString() } });
        const uint64_t reads = server.cache().reads();
        QVERIFY(QFile::remove(copy));
        QVERIFY(QFile::copy(QString::fromStdString(scenario("fragmentation.pickle")), copy));
        const Json after = structured(server, "step_peaks", { { "input", copy.toStdString() } });
        JSON_COMPARE(server.cache().reads(), reads + 1);
        QVERIFY(before["peak"] != after["peak"]);
    }

    void stepPeaksAndStackHistory()
    {
        const std::string path = scenario("leak.pickle");
        oomlens::mcp::McpServer server;
        handshake(server);
        const Json peaks = structured(server, "step_peaks", { { "input", path } });
        QVERIFY(peaks["steps"].size() >= 3);
        uint64_t highest = 0;
        for (const Json& step : peaks["steps"]) {
            QVERIFY(step["peak_live_bytes"].get<uint64_t>() >= step["start_live_bytes"].get<uint64_t>());
            highest = std::max(highest, step["peak_live_bytes"].get<uint64_t>());
        }
        QVERIFY(highest <= peaks["peak"]["allocated_bytes"].get<uint64_t>());

        // The leak: live_at's largest live allocation outside the model state, followed over time.
        const Json live = structured(server, "live_at", { { "input", path }, { "top", 50 } });
        std::optional<uint32_t> kept;
        for (const Json& allocation : live["allocations"]) {
            const std::string category = allocation["category"].get<std::string>();
            if (category != "parameters" && category != "gradients" && category != "optimizer_state"
                && !allocation["stack"].empty()) {
                kept = allocation["allocation"].get<uint32_t>();
                break;
            }
        }
        QVERIFY(kept);
        const Json history = structured(server, "stack_history", { { "input", path }, { "allocation", *kept } });
        QVERIFY(history["allocation_count"].get<uint64_t>() >= 1);
        QVERIFY(history["live_at_oom"]["count"].get<uint64_t>() >= 1);
        uint64_t perStepCount = 0;
        for (const Json& step : history["per_step"])
            perStepCount += step["count"].get<uint64_t>();
        JSON_COMPARE(history["allocation_count"], perStepCount);
        JSON_COMPARE(history["distinct_stacks"], 1);
        bool listed = false;
        for (const Json& allocation : history["allocations"])
            listed = listed || allocation["allocation"] == *kept;
        QVERIFY(listed || history["allocations_omitted"].get<uint64_t>() > 0);

        // By a frame's text: the innermost user frame of that stack matches at least those.
        const std::string frame = history["stack"][0].get<std::string>();
        const Json bySite = structured(server, "stack_history", { { "input", path }, { "site", frame } });
        QVERIFY(bySite["allocation_count"].get<uint64_t>() >= history["allocation_count"].get<uint64_t>());
        QVERIFY(errorText(server, "stack_history", { { "input", path }, { "site", "no_such_file.py:1" } })
                    .find("no allocation")
            != std::string::npos);
        QVERIFY(errorText(server, "stack_history", { { "input", path } }).find("give \"site\"") != std::string::npos);
    }

    void evidencePointsAtMoments()
    {
        oomlens::mcp::McpServer server;
        handshake(server);
        const std::vector<std::string> inputs { scenario("first_backward.pickle"), scenario("first_backward.oom.txt") };
        const Json evidence = structured(server, "evidence", { { "inputs", inputs }, { "top", 3 } });
        JSON_COMPARE(evidence["diagnosis"]["index"], 0);
        JSON_COMPARE(evidence["diagnosis"]["id"], "first_backward");
        int linked = 0;
        for (const Json& item : evidence["evidence"]) {
            QVERIFY(!item["text"].get<std::string>().empty());
            if (item["link"].is_null())
                continue;
            ++linked;
            JSON_COMPARE(item["link"]["input"], inputs[0]);
            JSON_COMPARE(item["moment"]["event"], item["link"]["event"]);
            QVERIFY(item["live_top"].size() <= 3);
        }
        QVERIFY(linked > 0);
        const Json byId = structured(server, "evidence", { { "inputs", inputs }, { "diagnosis", "first_backward" } });
        JSON_COMPARE(byId["diagnosis"]["index"], 0);
        QVERIFY(errorText(server, "evidence", { { "inputs", inputs }, { "diagnosis", 99 } }).find("index from 0")
            != std::string::npos);
    }

    void compareAndPlanAreTheCliDocuments()
    {
        oomlens::mcp::McpServer server;
        handshake(server);
        const QString pairDir = oomlens::test::testDataDir() + QStringLiteral("/compare/");
        const std::string a = QString(pairDir + QStringLiteral("batch.a.pickle")).toStdString();
        const std::string b = QString(pairDir + QStringLiteral("batch.b.pickle")).toStdString();
        const Json compared = structured(server, "compare", { { "a", a }, { "b", b } });
        if (!oomlens::test::oomlensBinary().isEmpty()) {
            const oomlens::test::CliRun cli = oomlens::test::runOomlens({ QStringLiteral("compare"),
                QString::fromStdString(a), QString::fromStdString(b), QStringLiteral("--json") });
            JSON_COMPARE(cli.exitCode, 0);
            JSON_COMPARE(compared, Json::parse(cli.out.toStdString()));
        }
        const Json windows
            = structured(server, "compare", { { "a", scenario("leak.pickle") }, { "windows", { "2:2", "3:3" } } });
        QVERIFY(windows["compare"].contains("surviving"));
        QVERIFY(errorText(server, "compare", { { "a", a } }).find("give \"b\"") != std::string::npos);
        QVERIFY(errorText(server, "compare", { { "a", a }, { "windows", { "2:2", "x" } } }).find("got 'x'")
            != std::string::npos);

        const Json plan = structured(server, "plan",
            { { "model", "gpt2" }, { "batch", 8 }, { "seq", 512 }, { "card", "24GB" }, { "precision", "mixed-bf16" } });
        const oomlens::cli::PlanRun run = oomlens::cli::readPlanRun(
            { "--model=gpt2", "--batch=8", "--seq=512", "--precision=mixed-bf16", "--card=24GB" });
        QVERIFY(!run.stop);
        JSON_COMPARE(plan, oomlens::planner::planToJson(run.result));
        JSON_COMPARE(
            structured(server, "plan", { { "params", 1.3e9 }, { "qlora", false } })["plan"]["model"]["parameters"],
            1300000000);
        // The cluster-scale and serving flags, switches as booleans.
        const Json serving = structured(server, "plan",
            { { "model", "llama-2-7b" }, { "inference", true }, { "batch", 8 }, { "seq", 4096 }, { "card", "80GB" },
                { "tp", 2 }, { "gpus", 2 } });
        const oomlens::cli::PlanRun servingRun = oomlens::cli::readPlanRun(
            { "--model=llama-2-7b", "--inference", "--batch=8", "--seq=4096", "--card=80GB", "--tp=2", "--gpus=2" });
        QVERIFY(!servingRun.stop);
        JSON_COMPARE(serving, oomlens::planner::planToJson(servingRun.result));
        JSON_COMPARE(errorText(server, "plan", { { "model", "gpt2" }, { "inference", "yes" } }),
            "plan: \"inference\" must be true or false");
        // The command's own checks, in the tool's words: its arguments, not the command's flags.
        JSON_COMPARE(errorText(server, "plan", { { "model", "gpt2" }, { "batch", "x" } }),
            "plan: \"batch\" needs a number, got 'x'");
        JSON_COMPARE(errorText(server, "plan", { { "model", "gpt2" }, { "precision", "fp8" } }),
            "plan: \"precision\" does not know 'fp8' (see the tool's input schema)");
        JSON_COMPARE(errorText(server, "plan", { { "model", "gpt2" }, { "experts_per_token", 0 } }),
            "plan: \"experts_per_token\" needs a number, got '0'");
        const std::string noModel = errorText(server, "plan", { { "batch", 2 } });
        QVERIFY2(noModel.find("give a model") != std::string::npos && noModel.find("--") == std::string::npos,
            noModel.c_str());
        for (const Json& arguments :
            { Json { { "model", "gpt2" }, { "gpus", 0 } }, Json { { "model", "gpt2" }, { "vpp", 2 } } }) {
            const std::string text = errorText(server, "plan", arguments);
            QVERIFY2(text.starts_with("plan: ") && text.find("--") == std::string::npos, text.c_str());
        }
        QVERIFY(errorText(server, "plan", { { "model", "gpt2" }, { "help", true } }).find("unknown argument")
            != std::string::npos);
    }

    void reportWritesTheFile()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string output = dir.filePath(QStringLiteral("oom.html")).toStdString();
        oomlens::mcp::McpServer server;
        handshake(server);
        const Json written = structured(server, "report",
            { { "inputs", { scenario("first_backward.pickle"), scenario("first_backward.oom.txt") } },
                { "output", output } });
        JSON_COMPARE(written["path"], output);
        JSON_COMPARE(written["bytes"], QFileInfo(QString::fromStdString(output)).size());
        JSON_COMPARE(written["top_diagnosis"], "first_backward");
        QVERIFY(oomlens::test::readFile(QString::fromStdString(output)).startsWith("<!DOCTYPE html>"));
        const std::string unwritable = "/nonexistent/dir/oom.html";
        const std::string error = errorText(
            server, "report", { { "inputs", { scenario("first_backward.pickle") } }, { "output", unwritable } });
        QVERIFY2(error.starts_with("oomlens: cannot write " + unwritable), error.c_str());
        QVERIFY(errorText(server, "report", { { "inputs", { scenario("first_backward.pickle") } }, { "output", "-" } })
                    .find("standard input")
            != std::string::npos);
    }

    void onlyInitializeAndPingBeforeInitialize()
    {
        oomlens::mcp::McpServer server;
        for (const Json& early : { request(1, "tools/list"),
                 request(2, "tools/call", { { "name", "plan" }, { "arguments", { { "model", "gpt2" } } } }),
                 request(3, "resources/list") }) {
            const Json answer = message(server, early);
            JSON_COMPARE(answer["id"], early["id"]);
            JSON_COMPARE(answer["error"]["code"], -32600);
            QVERIFY(answer["error"]["message"].get<std::string>().find("before initialize") != std::string::npos);
        }
        JSON_COMPARE(message(server, request(4, "ping"))["result"], Json::object());
        // initialize cannot ride in a batch.
        const Json batch = Json::parse(*server.handleLine(Json::array({ request(5, "initialize") }).dump()));
        JSON_COMPARE(batch[0]["error"]["code"], -32600);
        handshake(server);
        JSON_COMPARE(message(server, request(6, "tools/list"))["result"]["tools"].size(), size_t(8));
    }

    void unknownCursorIsInvalidParams()
    {
        oomlens::mcp::McpServer server;
        handshake(server);
        const Json answer = message(server, request(1, "tools/list", { { "cursor", "page-2" } }));
        JSON_COMPARE(answer["error"]["code"], -32602);
        JSON_COMPARE(message(server, request(2, "tools/list", { { "cursor", 7 } }))["error"]["code"], -32602);
        // No cursor, or a null one: the whole list (one page).
        JSON_COMPARE(message(server, request(3, "tools/list"))["result"]["tools"].size(), size_t(8));
        QVERIFY(!message(server, request(4, "tools/list"))["result"].contains("nextCursor"));
    }

    // A message nested 50,000 levels deep (a 100 KB line) used to overflow the stack (SIGSEGV),
    // before initialize too: now one error, and the next line is answered.
    void deepNestingIsOneError()
    {
        oomlens::mcp::McpServer server;
        const auto nested = [](const std::string& method, size_t depth) {
            return "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"" + method
                + "\",\"params\":{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}}";
        };
        for (const char* method : { "ping", "initialize", "tools/call" }) {
            const std::optional<std::string> answer = server.handleLine(nested(method, 50000));
            QVERIFY(answer);
            const Json parsed = Json::parse(*answer);
            JSON_COMPARE(parsed["error"]["code"], -32600);
            QVERIFY2(parsed["error"]["message"].get<std::string>().find("512") != std::string::npos, answer->c_str());
            JSON_COMPARE(message(server, request(2, "ping"))["result"], Json::object());
        }
        // Unclosed, and hidden inside strings: the brackets in a string are text, not depth.
        QVERIFY(server.handleLine(std::string(200000, '{')));
        const std::string inString = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{\"s\":\""
            + std::string(100000, '[') + "\\\"[\"}}";
        JSON_COMPARE(Json::parse(*server.handleLine(inString))["result"], Json::object());
        // The bound itself: 512 levels in all are a message, 513 are not.
        const std::string atBound = "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":{\"a\":"
            + std::string(510, '[') + std::string(510, ']') + "}}";
        JSON_COMPARE(Json::parse(*server.handleLine(atBound))["result"], Json::object());
        const std::string beyond = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{\"a\":"
            + std::string(511, '[') + std::string(511, ']') + "}}";
        JSON_COMPARE(Json::parse(*server.handleLine(beyond))["error"]["code"], -32600);
        // Deep tool arguments after initialize: the same error, the server still serving.
        handshake(server);
        JSON_COMPARE(Json::parse(*server.handleLine(nested("tools/call", 50000)))["error"]["code"], -32600);
        JSON_COMPARE(message(server, request(6, "tools/list"))["result"]["tools"].size(), size_t(8));
    }

    // An error quotes a few hundred bytes of what it is about: a 10 MB bad token used to come back
    // as a 10,486,000-byte answer.
    void errorsQuoteInputBriefly()
    {
        oomlens::mcp::McpServer server;
        const std::string huge(10 * 1024 * 1024, 'a');
        const auto errorLine = [&](const std::string& line) {
            const std::optional<std::string> answer = server.handleLine(line);
            if (!answer)
                qFatal("no answer");
            return *answer;
        };
        const std::string badToken = errorLine("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"" + huge);
        qInfo("a 10 MB unterminated string: a %zu-byte answer", badToken.size());
        QVERIFY2(badToken.size() < 1024, badToken.substr(0, 2000).c_str());
        JSON_COMPARE(Json::parse(badToken)["error"]["code"], -32700);
        QVERIFY(Json::parse(badToken)["error"]["message"].get<std::string>().ends_with("…"));
        // Cut at a character, not inside one: the answer stays UTF-8 (parse would throw otherwise).
        std::string wide;
        for (int i = 0; i < 200000; ++i)
            wide += "é";
        QVERIFY(errorLine("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"" + wide).size() < 1024);

        handshake(server);
        const std::string unknownMethod = errorLine(request(2, huge).dump());
        QVERIFY(unknownMethod.size() < 1024);
        JSON_COMPARE(Json::parse(unknownMethod)["error"]["code"], -32601);
        const std::string unknownTool = errorLine(request(3, "tools/call", { { "name", huge } }).dump());
        QVERIFY(unknownTool.size() < 1024);
        const std::string longId = errorLine("{\"jsonrpc\":\"2.0\",\"id\":\"" + huge + "\",\"method\":\"ping\"}");
        QVERIFY(longId.size() < 1024);
        JSON_COMPARE(Json::parse(longId)["id"], nullptr);
        // A tool's error quoting an argument: each line clipped.
        const Json toolError
            = message(server, request(4, "tools/call", { { "name", "diagnose" }, { "arguments", { { huge, 1 } } } }));
        QVERIFY(toolError.dump().size() < 2048);
        JSON_COMPARE(toolError["result"]["isError"], true);
        const Json badValue = message(server,
            request(5, "tools/call",
                { { "name", "live_at" },
                    { "arguments", { { "input", "/nonexistent/" + std::string(100000, 'b') } } } }));
        QVERIFY2(badValue.dump().size() < 2048, badValue.dump().substr(0, 3000).c_str());
        JSON_COMPARE(message(server, request(6, "ping"))["result"], Json::object());
    }

    // Clients that take one type per field reject ["integer", "null"]: every schema, input and
    // output, has single types; an input field that may be absent is simply not required.
    void schemasHaveOneTypePerField()
    {
        oomlens::mcp::McpServer server;
        handshake(server);
        const Json tools = message(server, request(1, "tools/list"))["result"]["tools"];
        for (const Json& tool : tools) {
            for (const char* which : { "inputSchema", "outputSchema" }) {
                std::vector<Json> types;
                int unions = 0;
                collectTypes(tool[which], types, unions);
                QVERIFY(!types.empty());
                for (const Json& type : types)
                    QVERIFY2(type.is_string(),
                        qPrintable(QString::fromStdString(
                            tool["name"].get<std::string>() + " " + which + ": " + type.dump())));
                if (std::string(which) == "inputSchema")
                    QVERIFY2(unions == 0, tool["name"].get<std::string>().c_str());
            }
        }
        // The fields that had two types still take both.
        const std::vector<std::string> inputs { scenario("first_backward.pickle"), scenario("first_backward.oom.txt") };
        JSON_COMPARE(
            structured(server, "evidence", { { "inputs", inputs }, { "diagnosis", "0" } })["diagnosis"]["index"], 0);
        JSON_COMPARE(
            structured(server, "evidence", { { "inputs", inputs }, { "diagnosis", 0 } })["diagnosis"]["index"], 0);
        JSON_COMPARE(structured(server, "plan",
                         { { "params", "1.3e9" }, { "card", 85899345920 } })["plan"]["model"]["parameters"],
            1300000000);
    }

    // A request carrying _meta.progressToken hears notifications/progress while its case is read
    // and analysed: the token, a progress that only grows, to the total.
    void progressIsReported()
    {
        oomlens::mcp::McpServer server;
        handshake(server);
        std::vector<Json> sent;
        server.setSender([&sent](const std::string& line) { sent.push_back(Json::parse(line)); });
        const Json answer = message(server,
            request(1, "tools/call",
                { { "name", "diagnose" },
                    { "arguments", { { "inputs", { scenario("leak.pickle"), scenario("leak.oom.txt") } } } },
                    { "_meta", { { "progressToken", "leak-1" } } } }));
        JSON_COMPARE(answer["result"]["isError"], false);
        QVERIFY(sent.size() >= 3);
        int last = -1;
        for (const Json& notification : sent) {
            JSON_COMPARE(notification["method"], "notifications/progress");
            JSON_COMPARE(notification["params"]["progressToken"], "leak-1");
            JSON_COMPARE(notification["params"]["total"], 1000);
            const int progress = notification["params"]["progress"].get<int>();
            QVERIFY(progress > last);
            last = progress;
            QVERIFY(!notification["params"]["message"].get<std::string>().empty());
        }
        JSON_COMPARE(last, 1000);
        // A job: its ranks, then the failing rank's case, one progress from 0 to the total.
        sent.clear();
        const std::string job = QString(oomlens::test::testDataDir() + QStringLiteral("/job")).toStdString();
        message(server,
            request(2, "tools/call",
                { { "name", "diagnose" }, { "arguments", { { "inputs", { job } } } },
                    { "_meta", { { "progressToken", 9 } } } }));
        QVERIFY(sent.size() >= 3);
        last = -1;
        for (const Json& notification : sent) {
            JSON_COMPARE(notification["params"]["progressToken"], 9);
            QVERIFY(notification["params"]["progress"].get<int>() > last);
            last = notification["params"]["progress"].get<int>();
        }
        JSON_COMPARE(last, 1000);
        // Without a token, or from the cache: no notification.
        sent.clear();
        message(
            server, request(3, "tools/call", { { "name", "diagnose" }, { "arguments", { { "inputs", { job } } } } }));
        QVERIFY(sent.empty());
    }

    // The built binary over a pipe, as an agent runs it: one answer per line on stdout, nothing
    // else there, and it exits when its input closes.
    void stdioExchange()
    {
        OOMLENS_REQUIRE_BINARY();
        const std::string snapshot = scenario("first_backward.pickle");
        QByteArray input;
        for (const Json& line : {
                 request(1, "initialize",
                     { { "protocolVersion", "2025-06-18" }, { "capabilities", Json::object() },
                         { "clientInfo", { { "name", "tst_mcpserver" }, { "version", "1" } } } }),
                 Json { { "jsonrpc", "2.0" }, { "method", "notifications/initialized" } },
                 request(2, "tools/list"),
                 request(3, "tools/call", { { "name", "diagnose" }, { "arguments", { { "inputs", { snapshot } } } } }),
                 request(4, "tools/call",
                     { { "name", "live_at" }, { "arguments", { { "input", snapshot }, { "top", 3 } } } }),
                 request(5, "tools/call",
                     { { "name", "diagnose" }, { "arguments", { { "inputs", { "/nonexistent.pickle" } } } } }),
             })
            input += QByteArray::fromStdString(line.dump()) + '\n';
        input += "this is not json\n";
        input += QByteArray::fromStdString(request(6, "ping").dump()) + '\n';
        const oomlens::test::CliRun run = oomlens::test::runOomlens({ QStringLiteral("mcp") }, input);
        JSON_COMPARE(run.exitCode, 0);
        const QList<QByteArray> lines = run.out.trimmed().split('\n');
        JSON_COMPARE(lines.size(), 7);
        // Tool calls run on workers: answers come as they are ready, each with its id.
        std::map<Json, Json> byId;
        for (const QByteArray& line : lines) {
            const Json answer = Json::parse(line.toStdString());
            byId[answer["id"]] = answer;
        }
        JSON_COMPARE(byId[1]["result"]["protocolVersion"], "2025-06-18");
        JSON_COMPARE(byId[2]["result"]["tools"].size(), size_t(8));
        JSON_COMPARE(byId[3]["result"]["isError"], false);
        JSON_COMPARE(byId[3]["result"]["structuredContent"]["diagnoses"][0]["id"], "first_backward");
        JSON_COMPARE(byId[4]["result"]["structuredContent"]["allocations"].size(), size_t(3));
        JSON_COMPARE(byId[5]["result"]["isError"], true);
        QVERIFY(
            byId[5]["result"]["content"][0]["text"].get<std::string>().starts_with("oomlens: /nonexistent.pickle: "));
        JSON_COMPARE(byId[nullptr]["error"]["code"], -32700);
        JSON_COMPARE(byId[6]["result"], Json::object());
        // The logs went to stderr.
        QVERIFY2(run.err.contains("oomlens mcp"), run.err.constData());
        QVERIFY2(run.err.contains("/nonexistent.pickle"), run.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestMcpServer)
#include "tst_mcpserver.moc"
