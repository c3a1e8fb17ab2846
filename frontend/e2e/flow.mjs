// A clinic's day in the real O3 front end, in Debian's Chromium (run by run.sh): the journeys
// in journeys/, run one after the other on one patient, each handing on what it made through
// lib.mjs's `state` (her chart, the bill of her check-in…). Each step waits for what a user
// sees at that point, asserts it, and only then saves its screenshot in artifacts/. The run
// fails on the first broken step (the steps after it are not run: exit code 1), on any error
// the browser's console shows, and on any back-end answer of 400 or more.
//
// E2E_JOURNEY=<name> runs one journey alone: reception, clinical, billing, stock, orders, ward,
// clinical-review, appointments, registers, reports or administration. What the journeys before it would have
// left (the administrator logged in at reception, the patient registered, her visit, the
// bill of her check-in, as that journey needs) is first made through the REST API, in a step
// of its own, "state-of-the-earlier-journeys". clinical-review needs what the clinical
// journey saves through its forms and refuses to run alone. E2E_JOURNEY=<a>,<b>,… runs
// several journeys that follow one another in the walk (reception,clinical), from the first
// one's seed. Unset or empty: the whole walk.
import { finish, start, step } from "./lib.mjs";
import * as reception from "./journeys/reception.mjs";
import * as clinical from "./journeys/clinical.mjs";
import * as billing from "./journeys/billing.mjs";
import * as orders from "./journeys/orders.mjs";
import * as ward from "./journeys/ward.mjs";
import * as clinicalReview from "./journeys/clinical-review.mjs";
import * as appointments from "./journeys/appointments.mjs";
import * as registers from "./journeys/registers.mjs";
import * as administration from "./journeys/administration.mjs";
import * as reports from "./journeys/reports.mjs";
import * as stock from "./journeys/stock.mjs";

// In the walk's order.
const journeys = {
  reception,
  clinical,
  billing,
  // Before orders, whose dispense draws from the pharmacy's stock.
  stock,
  orders,
  ward,
  "clinical-review": clinicalReview,
  appointments,
  registers,
  // Before administration, which ends the day in English and logs out.
  reports,
  administration,
};
const names = Object.keys(journeys);

// The journeys asked for: all of them, or a run of consecutive ones.
const asked = (process.env.E2E_JOURNEY || "").split(",").map((n) => n.trim()).filter(Boolean);
for (const name of asked) {
  if (!names.includes(name)) {
    console.error(`E2E_JOURNEY=${name}: no such journey; the journeys are ${names.join(", ")}`);
    process.exit(2);
  }
}
const first = asked.length ? names.indexOf(asked[0]) : 0;
const chosen = asked.length ? names.slice(first, first + asked.length) : names;
if (asked.length > 0 && asked.join() !== chosen.join()) {
  console.error(`E2E_JOURNEY=${asked.join()}: the journeys must follow one another as the walk runs them (${names.join(", ")})`);
  process.exit(2);
}
// The first journey needs nothing before it; a later one starts from its seed().
if (first > 0 && !journeys[names[first]].seed) {
  console.error(`journey ${names[first]} needs the earlier journeys (${names.slice(0, first).join(", ")}) and cannot run first; run it after them`);
  process.exit(2);
}

await start();
if (first > 0) await step("state-of-the-earlier-journeys", journeys[names[first]].seed);
for (const name of chosen) await journeys[name].run();
await finish();
