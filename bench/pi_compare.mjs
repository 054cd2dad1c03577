// pi's nearest operation to piweb's branch compare, for bench_compare.py: with the session open in
// memory, collectEntriesForBranchSummary() both ways (each side's entries from the common ancestor,
// as pi's branch summary finds them). pi has no compare of its own; SessionManager.open() is timed
// apart. bench_compare.py runs a copy of this script placed inside pi's install.
//
//   node pi_compare.mjs FILE LEAF_A LEAF_B [REPS]
import { collectEntriesForBranchSummary, SessionManager } from "@mariozechner/pi-coding-agent";

const [file, a, b, repsArg] = process.argv.slice(2);
const reps = Number(repsArg ?? 9);
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const time = (fn) => {
	fn();
	const out = [];
	for (let i = 0; i < reps; i++) {
		const t = performance.now();
		fn();
		out.push(performance.now() - t);
	}
	return median(out);
};
let session;
const openMs = time(() => {
	session = SessionManager.open(file);
});
let sides;
const compareMs = time(() => {
	const one = collectEntriesForBranchSummary(session, a, b);
	const two = collectEntriesForBranchSummary(session, b, a);
	sides = [one.entries.length, two.entries.length, one.commonAncestorId];
});
console.log(
	`open() median ${openMs.toFixed(1)} ms; both sides in memory median ${compareMs.toFixed(2)} ms ` +
		`(sides ${sides[0]} + ${sides[1]} entries, ancestor ${sides[2]})`,
);
