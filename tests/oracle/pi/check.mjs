// Is a session file one that pi itself could have written? The real pi SessionManager (npm
// @mariozechner/pi-coding-agent) opens each file, and the checks below look at what it read.
//
// Usage: node check.mjs FILE [FILE...]
// Prints one JSON line per file: {file, ok, entries, roots, leafId, contextMessages, counts, errors}
// (errors: at most 20 messages; `exception` instead when pi threw). Exits 1 if any file is not ok.
//
// A file is ok when:
//   - pi opens it without rewriting it (a v3 file: nothing to migrate), header first, version 3;
//   - every line is an entry pi kept (pi silently drops lines it cannot parse), ids are unique;
//   - it has one root, every parentId and label target is an entry of the file;
//   - each entry has the fields pi writes for its type, with an ISO timestamp;
//   - a tool result answers a tool call of the nearest assistant message above it;
//   - a compaction keeps from an entry above it on its own path (firstKeptEntryId), and the context
//     at the compaction is its summary followed by the kept messages;
//   - getTree() holds every entry, and the context at pi's leaf (the last line) has messages.
// ESM resolves the package from this script's folder upwards: run it from inside the install.
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager, buildSessionContext } from "@mariozechner/pi-coding-agent";

const isString = (v) => typeof v === "string";
const isTime = (v) => isString(v) && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(v) && !Number.isNaN(Date.parse(v));
const ROLES = new Set(["user", "assistant", "toolResult", "bashExecution", "custom"]);

// The fields each entry type must have, as pi writes them.
const SHAPES = {
	message: (e) => typeof e.message === "object" && e.message !== null && ROLES.has(e.message.role),
	model_change: (e) => isString(e.provider) && isString(e.modelId),
	thinking_level_change: (e) => isString(e.thinkingLevel),
	compaction: (e) => isString(e.summary) && isString(e.firstKeptEntryId) && typeof e.tokensBefore === "number",
	branch_summary: (e) => isString(e.fromId) && isString(e.summary),
	label: (e) => isString(e.targetId) && (e.label === undefined || isString(e.label)),
	session_info: (e) => e.name === undefined || isString(e.name),
	custom: (e) => isString(e.customType),
	custom_message: (e) =>
		isString(e.customType) && (isString(e.content) || Array.isArray(e.content)) && typeof e.display === "boolean",
};

function check(file, sm, before) {
	const errors = [];
	const text = before.toString("utf8");
	const lines = text.split("\n").filter((l) => l.trim());
	const header = sm.getHeader();
	if (header?.type !== "session" || JSON.parse(lines[0]).type !== "session") errors.push("the first line is no header");
	if (header?.version !== 3) errors.push(`header version ${header?.version}, not 3`);
	const entries = sm.getEntries();
	if (entries.length !== lines.length - 1) errors.push(`pi kept ${entries.length} entries of ${lines.length - 1} lines`);
	const byId = new Map(entries.map((e) => [e.id, e]));
	if (byId.size !== entries.length) errors.push(`${entries.length - byId.size} repeated ids`);

	let roots = 0;
	const counts = {};
	for (const e of entries) {
		const kind = e.type === "message" ? `message:${e.message?.role}` : e.type;
		counts[kind] = (counts[kind] ?? 0) + 1;
		if (!isString(e.id) || !e.id) errors.push(`an entry without an id: ${JSON.stringify(e).slice(0, 80)}`);
		if (!isTime(e.timestamp)) errors.push(`${e.id}: timestamp ${JSON.stringify(e.timestamp)}`);
		if (e.parentId === null) roots++;
		else if (!byId.has(e.parentId)) errors.push(`${e.id}: parent ${e.parentId} is not in the file`);
		const shape = SHAPES[e.type];
		if (shape && !shape(e)) errors.push(`${e.id}: not a well-formed ${e.type} entry`);
		if (e.type === "label" && !byId.has(e.targetId)) errors.push(`${e.id}: label target ${e.targetId} missing`);
		if (e.type === "message" && e.message?.role === "toolResult") {
			// The nearest assistant message above it must have made the call.
			let at = byId.get(e.parentId);
			while (at && !(at.type === "message" && at.message.role === "assistant")) at = byId.get(at.parentId);
			const calls = (at?.message.content ?? []).filter((c) => c.type === "toolCall").map((c) => c.id);
			if (!calls.includes(e.message.toolCallId)) errors.push(`${e.id}: answers ${e.message.toolCallId}, not called above`);
		}
		if (e.type === "compaction") {
			const path = sm.getBranch(e.id).map((x) => x.id);
			const kept = path.indexOf(e.firstKeptEntryId);
			if (kept < 0 || kept >= path.length - 1) errors.push(`${e.id}: firstKeptEntryId is not above it`);
			const context = buildSessionContext(entries, e.id, byId).messages;
			if (context[0]?.role !== "compactionSummary" || context[0].summary !== e.summary)
				errors.push(`${e.id}: the context at the compaction does not start with its summary`);
			else if (context.length < 2) errors.push(`${e.id}: the compaction keeps no message`);
		}
	}
	if (roots !== 1) errors.push(`${roots} roots, not 1`);
	let nodes = 0;
	const stack = [...sm.getTree()];
	while (stack.length) {
		const node = stack.pop();
		nodes++;
		stack.push(...node.children);
	}
	if (nodes !== entries.length) errors.push(`getTree() holds ${nodes} of ${entries.length} entries`);
	const context = sm.buildSessionContext();
	if (context.messages.length === 0) errors.push("no messages in the context at the leaf");
	return {
		file,
		ok: errors.length === 0,
		entries: entries.length,
		roots,
		leafId: sm.getLeafId(),
		contextMessages: context.messages.length,
		counts,
		errors: errors.slice(0, 20),
	};
}

let failed = false;
for (const file of process.argv.slice(2)) {
	const dir = mkdtempSync(join(tmpdir(), "pi-check-"));
	let report;
	try {
		const copy = join(dir, "session.jsonl"); // pi rewrites the files it migrates: never the original
		copyFileSync(file, copy);
		const before = readFileSync(copy);
		const sm = SessionManager.open(copy, dir);
		report = check(file, sm, before);
		if (!readFileSync(copy).equals(before)) {
			report.errors.unshift("pi rewrote the file when it opened it");
			report.ok = false;
		}
	} catch (error) {
		report = { file, ok: false, exception: String(error?.stack ?? error) };
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
	failed ||= !report.ok;
	console.log(JSON.stringify(report));
}
process.exit(failed ? 1 : 0);
