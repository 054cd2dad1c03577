// Oracle for piweb's conformance tests: what the real pi SessionManager (npm
// @mariozechner/pi-coding-agent) makes of session files, many questions per file, one process.
//
// ESM resolves packages relative to this script, so it must sit inside a directory where the
// package is installed (tests/oracle/install.py places a copy in var/pi/).
//
// Usage:
//   node pi_batch.mjs FILE [LEAF...]        one file; LEAF "null" = null leaf, "-" = no leaf (last entry)
//   node pi_batch.mjs < jobs.json           {"jobs": [{file, leaves?, leafIndexes?, tree?, info?, entries?, text?, forks?}]}
//                                           (leaves: ids or null; an unknown id falls back to the last entry)
// Prints one JSON document: an array with one result per job (argv mode: that result alone):
//   leafId       getLeafId() after open
//   leafContext  sm.buildSessionContext() (the file's own leaf)
//   contexts     [buildSessionContext(getEntries(), leaf) for each leaf], in the order asked
//   indexContexts  the same at getEntries()[i] for each i of leafIndexes (ids pi drew while migrating)
//   forks        for each id of `forks`: createBranchedSession(id) -> {header, entries, leafId, text}
//   tree         getTree() flattened, pre-order: [{id, type, role?, label?, children: [ids]}], roots: [ids]
//   info         SessionManager.list() fields: id, name, cwd, messageCount, firstMessage, parentSessionPath
//   header       getHeader() after pi's migration
//   entries      getEntries() after pi's migration (with `entries: true`)
//   text         the file as pi left it after open (rewritten if it migrated it; with `text: true`)
//   rewritten    whether open() rewrote the file
// Each file is copied to a temp folder first: pi rewrites migrated files in place.
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildSessionContext, SessionManager } from "@mariozechner/pi-coding-agent";

function flatTree(sm) {
	const nodes = [];
	const roots = sm.getTree();
	// Iterative pre-order walk: deep linear sessions would overflow a recursive one (and nest
	// deeper than JSON parsers like).
	const stack = [...roots].reverse();
	while (stack.length) {
		const n = stack.pop();
		nodes.push({
			id: n.entry.id,
			type: n.entry.type,
			...(n.entry.type === "message" ? { role: n.entry.message?.role } : {}),
			...(n.label !== undefined ? { label: n.label } : {}),
			children: n.children.map((c) => c.entry.id),
		});
		for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
	}
	return { roots: roots.map((n) => n.entry.id), nodes };
}

// createBranchedSession(leaf) ("/fork") on a fresh copy: the new session's header and entries.
function fork(file, leaf) {
	const dir = mkdtempSync(join(tmpdir(), "pi-batch-fork-"));
	try {
		const copy = join(dir, "session.jsonl");
		copyFileSync(file, copy);
		const sm = SessionManager.open(copy, dir);
		const path = sm.createBranchedSession(leaf);
		return {
			header: sm.getHeader(),
			entries: sm.getEntries(),
			leafId: sm.getLeafId(),
			text: existsSync(path) ? readFileSync(path, "utf8") : null,
		};
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

async function runJob(job) {
	const dir = mkdtempSync(join(tmpdir(), "pi-batch-"));
	try {
		const copy = join(dir, "session.jsonl");
		copyFileSync(job.file, copy);
		const before = readFileSync(copy);
		const sm = SessionManager.open(copy, dir);
		const after = readFileSync(copy);
		const entries = sm.getEntries();
		const out = {
			file: job.file,
			leafId: sm.getLeafId(),
			leafContext: sm.buildSessionContext(),
			header: sm.getHeader(),
			rewritten: !after.equals(before),
		};
		out.contexts = (job.leaves ?? []).map((leaf) => buildSessionContext(entries, leaf));
		out.indexContexts = (job.leafIndexes ?? []).map((i) => buildSessionContext(entries, entries[i].id));
		if (job.tree) out.tree = flatTree(sm);
		if (job.info) {
			const infos = await SessionManager.list(dir, dir);
			const i = infos[0] ?? {};
			out.info = {
				id: i.id,
				name: i.name ?? null,
				cwd: i.cwd,
				messageCount: i.messageCount,
				firstMessage: i.firstMessage,
				parentSessionPath: i.parentSessionPath ?? null,
			};
		}
		if (job.entries) out.entries = entries;
		if (job.text) out.text = after.toString("utf8");
		out.forks = (job.forks ?? []).map((leaf) => fork(job.file, leaf));
		return out;
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

const argv = process.argv.slice(2);
if (argv.length > 0) {
	const [file, ...rest] = argv;
	const leaves = rest.map((l) => (l === "null" ? null : l === "-" ? undefined : l));
	const result = await runJob({ file, leaves, tree: true, info: true });
	process.stdout.write(JSON.stringify(result));
} else {
	const chunks = [];
	for await (const chunk of process.stdin) chunks.push(chunk);
	const { jobs } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
	const results = [];
	for (const job of jobs) results.push(await runJob(job));
	process.stdout.write(JSON.stringify(results));
}
