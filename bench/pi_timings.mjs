// The real pi's timings on one session file, for bench_store.py to set piweb's beside them.
// pi is the npm package @mariozechner/pi-coding-agent pinned in tests/oracle/pi/; bench_store.py
// runs a copy of this script placed inside its install (ESM finds packages from the script's folder).
//
//   node --expose-gc pi_timings.mjs FILE [--reps 7] [--budget-ms 3000]
//        [--targets 12,345,...] [--messages MESSAGES.json]
//
// --targets: indices into getEntries() to branch to; --messages: a JSON array of messages to append
// (bench_store.py passes the ones it appends through piweb). The file itself is never changed: pi
// works on copies in a temporary folder. One JSON line per figure on stdout, each with a "kind":
//   env                  pi's and node's versions, the file's bytes and lines, its format version
//   open                 SessionManager.open() of the file (migrated to v3 by a first, untimed open),
//                        a GC before each: median_ms, p90_ms, min_ms, max_ms, n; rss_mb after
//   check                what pi read, to compare with piweb: entries, leafId, leafPathLen,
//                        contextMessages (at the leaf), treeNodes
//   buildSessionContext  at the file's leaf (the last line): median_ms, ...
//   getTree              the whole tree: median_ms, ...
//   branch_ctx           per target: branch(id), then buildSessionContext(): median_ms, p90_ms, ...,
//                        targets, ctxCounts (messages in each context), ctxMessagesSum
//   append               the messages appended with appendMessage(), each written to the file, on a
//                        fresh copy, a few times: per_append_median_us, per_append_p90_us, median_ms
//                        (all of them), appends, entriesAfter (pi's count when it opens the result)
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager } from "@mariozechner/pi-coding-agent";

const args = process.argv.slice(2);
const option = (name, fallback) => {
	const at = args.indexOf(`--${name}`);
	return at >= 0 ? args[at + 1] : fallback;
};
const file = args.find((a, i) => !a.startsWith("--") && !(args[i - 1] ?? "").startsWith("--"));
if (!file) {
	console.error("usage: node --expose-gc pi_timings.mjs FILE [--reps N] [--budget-ms MS] [--targets I,J,...] [--messages F]");
	process.exit(2);
}
const reps = Number(option("reps", 7));
const budgetMs = Number(option("budget-ms", 3000));
const targets = (option("targets", "") || "").split(",").filter(Boolean).map(Number);
const messages = option("messages") ? JSON.parse(readFileSync(option("messages"), "utf8")) : [];

const gc = globalThis.gc ?? (() => {});
const clock = () => Number(process.hrtime.bigint()) / 1e6;
const emit = (kind, figures) => console.log(JSON.stringify({ kind, ...figures }));
const round = (ms) => Math.round(ms * 1000) / 1000;

function summary(times) {
	const sorted = [...times].sort((a, b) => a - b);
	const n = sorted.length;
	const middle = n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	const at = (q) => sorted[Math.min(n - 1, Math.floor(q * n))];
	return { median_ms: round(middle), p90_ms: round(at(0.9)), min_ms: round(sorted[0]), max_ms: round(sorted[n - 1]), n };
}

// fn at least `least` times (after one untimed run), then on until `most` runs or the budget is spent.
function timed(fn, { least = reps, most = 51, collect = false } = {}) {
	fn();
	const times = [];
	let spent = 0;
	while (times.length < least || (times.length < most && spent < budgetMs)) {
		if (collect) gc();
		const start = clock();
		fn();
		const took = clock() - start;
		times.push(took);
		spent += took;
	}
	return summary(times);
}

const text = readFileSync(file, "utf8");
const version = JSON.parse(text.slice(0, text.indexOf("\n"))).version ?? 1;
// dist/index.js's folder is beside the package's package.json (its "exports" do not list that file)
const manifest = new URL("../package.json", import.meta.resolve("@mariozechner/pi-coding-agent"));
emit("env", {
	file,
	bytes: statSync(file).size,
	lines: text.split("\n").filter((l) => l.trim()).length,
	fileVersion: version,
	pi: JSON.parse(readFileSync(manifest, "utf8")).version,
	node: process.version,
});

const dir = mkdtempSync(join(tmpdir(), "pi-timings-"));
try {
	const work = join(dir, "session.jsonl");
	copyFileSync(file, work);
	SessionManager.open(work, dir); // migrates a v1/v2 copy to v3 (rewriting it), once
	const pristine = join(dir, "pristine.jsonl");
	copyFileSync(work, pristine);

	let sm;
	const open = timed(() => (sm = SessionManager.open(work, dir)), { most: reps, collect: true });
	emit("open", { ...open, rss_mb: Math.round(process.memoryUsage().rss / 2 ** 20) });

	const entries = sm.getEntries();
	let treeNodes = 0;
	const stack = [...sm.getTree()];
	while (stack.length) {
		treeNodes++;
		stack.push(...stack.pop().children);
	}
	emit("check", {
		entries: entries.length,
		leafId: sm.getLeafId(),
		leafPathLen: sm.getBranch().length,
		contextMessages: sm.buildSessionContext().messages.length,
		treeNodes,
	});

	emit("buildSessionContext", timed(() => sm.buildSessionContext(), { least: Math.max(reps, 11) }));
	emit("getTree", timed(() => sm.getTree(), { least: Math.max(reps, 11) }));

	if (targets.length) {
		const leaf = sm.getLeafId();
		const times = [];
		const ctxCounts = [];
		for (const index of targets) {
			const start = clock();
			sm.branch(entries[index].id);
			const context = sm.buildSessionContext();
			times.push(clock() - start);
			ctxCounts.push(context.messages.length);
		}
		sm.branch(leaf);
		const ctxMessagesSum = ctxCounts.reduce((a, b) => a + b, 0);
		emit("branch_ctx", { ...summary(times), targets, ctxCounts, ctxMessagesSum });
	}
	sm = undefined;

	if (messages.length) {
		const copy = join(dir, "appends.jsonl");
		const each = [];
		const totals = [];
		let entriesAfter = 0;
		for (let round_ = 0; round_ < Math.max(3, Math.min(reps, 5)); round_++) {
			copyFileSync(pristine, copy);
			const manager = SessionManager.open(copy, dir);
			gc();
			const start = clock();
			for (const message of messages) {
				const one = clock();
				manager.appendMessage(message);
				each.push(clock() - one);
			}
			totals.push(clock() - start);
			if (round_ === 0) entriesAfter = SessionManager.open(copy, dir).getEntries().length;
		}
		const per = summary(each);
		emit("append", {
			...summary(totals),
			appends: messages.length,
			per_append_median_us: round(per.median_ms * 1000),
			per_append_p90_us: round(per.p90_ms * 1000),
			entriesAfter,
		});
	}
} finally {
	rmSync(dir, { recursive: true, force: true });
}
