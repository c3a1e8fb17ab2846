// What the browser walk's journeys (journeys/*.mjs, run by flow.mjs) share: the back end's
// API, the browser and its page, `step()`, and the state one journey leaves for the next.
// Each step waits for what a user sees at that point (the fields, the chosen location, the
// chart's widgets, loaders gone), asserts it, and only then saves its screenshot in
// artifacts/. The run fails on the first broken step, on any error the browser's console
// shows (an unknown configuration key, a missing translation…), and on any back-end
// answer of 400 or more.
//
// Importing this file starts nothing: start() empties artifacts/, registers the patient the
// walk searches for and opens the browser; finish() closes it and prints the summary.
import { chromium } from "playwright-core";
import { schemaPaths } from "../check-config-keys.mjs";
import { mkdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

export const base = process.env.E2E_BASE;
export const password = process.env.E2E_PASSWORD;
const artifacts = join(dirname(fileURLToPath(import.meta.url)), "artifacts");
export const basic = "Basic " + Buffer.from(`admin:${password}`).toString("base64");
// The password of the account the walk creates (it meets the default password policy).
export const clerkPassword = "Accueil-2026-nuit";

export async function api(method, path, body) {
  const res = await fetch(`${base}/openmrs/ws/rest/v1/${path}`, {
    method,
    headers: { Authorization: basic, "Content-Type": "application/json", Accept: "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// What a journey leaves for the journeys after it, all of it here. (A journey run alone,
// E2E_JOURNEY, has its `seed()` make the same through the API.)
export const state = {
  // The chart of the patient registered at reception, Grâce Kapinga: the address the
  // registration form opened, which holds her uuid.
  chartUrl: undefined,
  // The receipt number of the bill made with her visit at check-in.
  checkInReceipt: undefined,
  // The page of the bill made from her chart, where the cashier takes its payment.
  billUrl: undefined,
};
export const patientUuid = () => state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];

// The browser, its context and its page: set by start(). (A module's exported variables
// are live: a journey that imports `page` sees the page once start() has made it.)
export let browser;
export let context;
export let page;

const backendErrors = [];
// The framework (10.0.0) checks a module's settings against the module's schema when it
// renders one of the module's extensions, even before the module has registered that
// schema (its settings are applied once it has): "Unknown config key" then names a setting
// that is defined. Such a message passes only if the built module's schema, read as the
// build's check reads it, defines that exact path; any other console error fails the step.
const spaDir = process.env.E2E_SPA_DIR;
function knownSetting(message) {
  const m = message.match(/^Unknown config key '(@[^/]+\/[^.]+)\.(.+)' provided\. Ignoring\.$/);
  if (!m || !spaDir) return false;
  const paths = schemaPaths(spaDir, m[1]);
  return paths !== null && paths.has(m[2]);
}
// Requests a pinned module makes knowing they fail, answered as OpenMRS answers them: the
// reports app 4.4.0 asks for a report's scheduled request before the report has one
// (`reportRequest/undefined`), and the reporting module answers 404, as this server does.
const EXPECTED_FAILURES = [/\/ws\/rest\/v1\/reportingrest\/reportRequest\/undefined$/];
const expectedFailure = (url) => EXPECTED_FAILURES.some((re) => re.test(new URL(url).pathname));
// Each step's requests with how long they took, so that a failed step can say what was slow
// (and what never finished).
const started = new Map();
let stepRequests = [];
const finished = (how) => (r) => {
  const t = started.get(r);
  if (t === undefined) return;
  started.delete(r);
  stepRequests.push({ what: `${r.method()} ${r.url().replace(base, "")}`, ms: Date.now() - t, how });
};
function slowest() {
  const now = Date.now();
  const pending = [...started].map(([r, t]) => ({ what: `${r.method()} ${r.url().replace(base, "")}`, ms: now - t, how: "pending" }));
  return [...stepRequests, ...pending]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 12)
    .map((x) => `${String(x.ms).padStart(6)} ms ${x.how.padEnd(7)} ${x.what.slice(0, 160)}`)
    .join("\n  ");
}
// Two messages only say that the browser took longer than a timer allows: the framework's
// when a module's script has not run 5 s after it was added, and single-spa's minified
// message 31 when a mounted part of the page has not updated within 3 s. Both go on once the
// work is done, and the step's own checks still decide. On this 2-core machine Chromium's
// main thread alone can take that long on the chart's pages, so they are reported as notes,
// with the step's slowest requests to show whether the server was slow, instead of failing
// the walk.
const SLOW_BROWSER = [/^The script at \S+ did not load within 5 seconds\./, /^single-spa minified message #31:/];
const slowNotes = [];
// Carbon's accessibility warnings about a pinned module's own markup (a button drawn with
// an icon and no description), which the module logs as console errors: noted, not failed,
// and only from the module named (the stock app 3.2.1's action buttons).
const MODULE_MARKUP_WARNINGS = [
  { text: /^Button: renderIcon property specified without also providing an iconDescription property\./, module: "openmrs-esm-stock-management-app-" },
];
const markupNotes = new Set();
// Settings a pinned module's extension reads from its own configuration without its schema
// declaring them: the framework logs "Unknown config key … Ignoring." and still hands them to
// the extension (the step that uses one asserts what it renders). The patient chart (12.3.4)
// reads its encounter list's `tabDefinitions` so.
const UNDECLARED_EXTENSION_SETTINGS = ["@openmrs/esm-patient-chart-app.tabDefinitions"];
const undeclaredMessage = (text) =>
  UNDECLARED_EXTENSION_SETTINGS.some((key) => text === `Unknown config key '${key}' provided. Ignoring.`);
const consoleErrors = [];
const raceNotes = new Set();

// The widgets the chart's summary shows with the modules in frontend/spa-modules.json.
export const summaryWidgets = ["Signes vitaux", "Biométrie", "Enregistrer les signes vitaux", "Allergies", "Conditions médicales"];

// English a French screen must not show: strings the pinned modules have been seen to leave
// untranslated, and the English of the chart's main labels. The French walk fails on any.
const ENGLISH = [
  "Logout", "Visit Time", "Visit Type", "Gender", "Log out", "Normal ranges", "View normal ranges", "Patient summary", "Record vitals",
  "Start a visit", "Start visit", "End visit", "Active visit", "Vitals and biometrics", "beats/min",
  "breaths/min", "Search patient", "Save and close", "Discard", "Visit type", "Biometrics",
  "You must end the current visit", "This patient already has an active visit", "Form submitted", "Record updated", "Completed forms",
  "Test Results", "Individual tests", "Over time", "No results to display", "Result date", "Reset tree", "Show tree",
  "Record a new allergy", "Allergy saved", "Severity of worst reaction", "Select the reactions", "Record condition",
  "Condition saved", "Onset date", "Clinical status", "Search conditions", "Possible duplicate",
  "Immunization Form", "Vaccination saved successfully", "Lot number", "Vaccination date", "Dose-1", "Booster-1",
  "Upcoming Medications", "Order placed", "Placed order for", "Back to order basket", "Add to my pinned orders",
  "Auto-calculated", "Add test order", "Days", "Test Order", "Drug Order", "Orders placed", "Order updated",
  "Medication successfully dispensed", "Dispense prescription", "Active prescriptions",
  "Medication dispense paused", "Medication dispense closed", "Reason for pause", "Reason for close", "Renew",
  "Sticky note", "program enrollments", "Program enrollment saved", "Marking the patient as deceased",
  "Patient marked deceased successfully", "Serve patient", "Queue screen", "Patient lists", "New list",
  "Add patient to list", "Create list", "Attachments", "Add attachment", "Upload complete", "Attachment preview",
  "Appointments", "Check in", "Check out", "Checked in", "Appointment scheduled", "Appointment ended",
  "Billing history", "Create bill", "Bill processed", "Finalize bill", "Bill finalized", "Payment method",
  "Process payment", "Print receipt", "Print bill", "Amount due", "Payment processed successfully",
  "Admission requests", "Admit patient", "admitted successfully", "Confirm discharge", "Discharge note", "Wards",
  "Billing details", "Payment details", "Paying", "Non paying", "Billable service", "Bill created successfully",
  "Last Visit Information", "The last visit was",
  "Bed allocation", "Bed types", "Bed tags", "Add bed", "Bed created successfully", "Select a bed",
  "Queue Number",
  "Stock Status Report", "Stock-Out Report", "Stock Consumption Report", "Stock Expiry Report",
  "Patient records", "Duplicates and merge", "Change history", "Compare and merge", "Records merged", "Record to keep",
  "Edit patient flags", "Flags updated", "Search for a flag", "risk flag", "Save & close", "Sort by",
  // Carbon's own (frontend/patch-modules.mjs).
  "Items per page", "of 1 page", "Page of 1", "Filter table", "items selected",
];
let french = true;
// Whether the screens are to be in French (the walk switches to English before logging out).
export function setFrench(value) {
  french = value;
}
async function noEnglish() {
  const text = await page.innerText("body");
  const found = ENGLISH.filter((e) => new RegExp(`(^|[^\\p{L}])${e.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|[^\\p{L}])`, "u").test(text));
  if (found.length > 0) throw new Error(`English on a French screen: ${found.join(", ")}`);
}

export async function start() {
  // Only this run's screenshots.
  rmSync(artifacts, { recursive: true, force: true });
  mkdirSync(artifacts, { recursive: true });

  // An existing patient to find, registered through the API with a generated identifier.
  const sources = await api("GET", "idgen/identifiersource?v=default");
  const source = sources.results[0];
  const { identifier } = await api("POST", `idgen/identifiersource/${source.uuid}/identifier`, {});
  await api("POST", "patient", {
    person: { names: [{ givenName: "Hélène", familyName: "Mbuyi" }], gender: "F", birthdate: "1988-05-17" },
    identifiers: [{ identifier, identifierType: source.identifierType.uuid, preferred: true }],
  });

  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "fr-FR" });
  // Nothing leaves the test host.
  await context.route(/^(?!http:\/\/127\.0\.0\.1)/, (route) => route.abort());
  page = await context.newPage();
  page.on("response", (r) => {
    if (process.env.E2E_TRACE && r.url().includes("/openmrs/") && !r.url().includes("/openmrs/spa/")) console.log(`  ${r.status()} ${r.request().method()} ${r.url()}`);
    if (r.url().includes("/openmrs/") && !r.url().includes("/openmrs/spa/") && r.status() >= 400 && !(r.status() === 404 && expectedFailure(r.url()))) {
      backendErrors.push(`${r.status()} ${r.request().method()} ${r.url()}`);
      // What was sent and answered, to see why.
      r.text()
        .then((body) => console.log(`  ${r.status()} answer: ${body.slice(0, 500)}\n  request: ${(r.request().postData() ?? "").slice(0, 800)}`))
        .catch(() => {});
    }
  });
  page.on("request", (r) => started.set(r, Date.now()));
  page.on("requestfinished", finished("done"));
  page.on("requestfailed", finished("failed"));
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    const text = m.text();
    if (SLOW_BROWSER.some((re) => re.test(text))) slowNotes.push(text.slice(0, 200));
    else if (knownSetting(text) || undeclaredMessage(text)) raceNotes.add(text);
    else if (MODULE_MARKUP_WARNINGS.some((w) => w.text.test(text) && (m.location()?.url ?? "").includes(w.module))) markupNotes.add(text.slice(0, 120));
    else if (/^Failed to load resource: the server responded with a status of 404/.test(text) && m.location()?.url && expectedFailure(m.location().url)) return;
    else consoleErrors.push(`${text.slice(0, 300)}${m.location()?.url ? ` (${m.location().url})` : ""}`);
  });
  page.on("pageerror", (e) => consoleErrors.push(`uncaught: ${e.message.slice(0, 300)}`));
}

let n = 0;
let passed = 0;
export async function step(name, fn) {
  n += 1;
  const shot = join(artifacts, `${String(n).padStart(2, "0")}-${name}.png`);
  stepRequests = [];
  try {
    await fn();
    await settled();
    if (french) await noEnglish();
    if (consoleErrors.length > 0) throw new Error(`the console showed errors:\n  ${consoleErrors.join("\n  ")}`);
    if (backendErrors.length > 0) throw new Error(`the back end answered errors:\n  ${backendErrors.join("\n  ")}`);
    await page.screenshot({ path: shot });
    passed += 1;
    console.log(`ok ${n}: ${name}`);
    if (slowNotes.length > 0) {
      console.log(`  note: the browser was slow in this step:\n    ${slowNotes.join("\n    ")}\n  its slowest requests:\n  ${slowest()}`);
      slowNotes.length = 0;
    }
  } catch (e) {
    await page.screenshot({ path: shot }).catch(() => {});
    console.log(`failed ${n}: ${name}: ${e.message}`);
    console.log(`the step's slowest requests:\n  ${slowest()}`);
    if (slowNotes.length > 0) console.log(`the browser was slow in this step:\n  ${slowNotes.join("\n  ")}`);
    console.log((await page.innerText("body").catch(() => "")).slice(0, 1500));
    const fields = await page
      .$$eval("input, textarea, select", (es) => es.map((e) => `${e.tagName.toLowerCase()}#${e.id}[name=${e.getAttribute("name")}]`))
      .catch(() => []);
    console.log(`fields on the page: ${fields.join(" ")}`);
    console.log(`e2e: ${passed} passed, 1 failed`);
    await browser.close();
    process.exit(1);
  }
}
export const visible = (locator) => locator.first().waitFor({ state: "visible", timeout: 30000 });

/** Follows the app menu's link so named. The menu's button is on the page before the
 * navigation app has bound its click (just after a page load, a click can go unheard), so
 * the click is repeated until the menu's panel (its extension slot) has opened; then the
 * link is awaited there, as other modules' links join the slot as they load. */
export async function followAppMenuLink(name) {
  const panel = page.locator('[data-extension-slot-name="app-menu-slot"]');
  for (let attempt = 1; !(await panel.isVisible()); attempt++) {
    await page.getByRole("button", { name: "Applications" }).click();
    try {
      await panel.waitFor({ state: "visible", timeout: 5000 });
    } catch (e) {
      if (attempt === 3) throw new Error(`the app menu did not open after ${attempt} clicks`);
    }
  }
  await panel.getByRole("link", { name, exact: true }).click();
}
// No loader, skeleton or progress indicator left on the page: what the screenshot shows is
// what the user sees once the screen has loaded.
const settled = () =>
  page.waitForFunction(
    () => {
      const busy = document.querySelectorAll('.cds--skeleton, [class*="skeleton"], .cds--loading, .cds--inline-loading, [aria-busy="true"]');
      return [...busy].every((e) => e.offsetParent === null);
    },
    null,
    // Every 200 ms rather than every frame: the check walks the whole page, which would
    // otherwise take the main thread from the application it waits for.
    { timeout: 30000, polling: 200 },
  );

// Once every step has passed.
export async function finish() {
  await browser.close();
  for (const note of raceNotes) console.log(`  note: defined in the module's schema, reported before it loaded: ${note}`);
  for (const note of markupNotes) console.log(`  note: a pinned module's markup warning: ${note}`);
  console.log(`e2e: ${passed} passed, 0 failed`);
}

// A journey run alone (E2E_JOURNEY) starts from what the journeys before it leave, made
// here through the API: each journey's seed() calls those it needs, in a step of its own.

// Bondeko - Accueil, where the walk logs in (and where the ward journey comes back to).
export const RECEPTION = "5a21f7b4-943d-4182-906c-ec6b27e4c6a8";
// Centre de santé Bondeko: the visit location the visit form picks for a session at one of
// its services (the front end restricts visits to the locations tagged so).
export const FACILITY = "d652f74b-06d1-4d02-9949-30bc2ca5aa44";

/** The browser logged in (as the administrator, working at reception, unless told): the two calls the login
 * page and its location picker make (the session asked with Basic credentials, which sets
 * its cookie in the browser's context, then the session's location). */
export async function logIn(username = "admin", userPassword = password, location = RECEPTION) {
  // A new session: the previous one's cookie goes first, or it would be asked again.
  await context.clearCookies();
  const authorization = "Basic " + Buffer.from(`${username}:${userPassword}`).toString("base64");
  const login = await context.request.get(`${base}/openmrs/ws/rest/v1/session`, { headers: { Authorization: authorization, Accept: "application/json" } });
  const session = await login.json();
  if (!login.ok() || session.authenticated !== true) throw new Error(`${username} did not log in: ${login.status()} ${JSON.stringify(session)}`);
  await workAt(location);
}

/** The browser's session moved to another of the facility's locations, as the location
 * picker does; screens loaded after it work there. */
export async function workAt(location) {
  const located = await context.request.post(`${base}/openmrs/ws/rest/v1/session`, { data: { sessionLocation: location }, headers: { Accept: "application/json" } });
  const at = await located.json();
  if (!located.ok() || at.sessionLocation?.uuid !== location) throw new Error(`the session did not move to ${location}: ${located.status()} ${JSON.stringify(at)}`);
}

/** The patient the reception journey registers, as its registration form leaves her: Grâce
 * Kapinga, a woman of an estimated 34 years (born on this day 34 years ago, the date the form
 * works out; the edit form reads her age back from the year alone, which is what the server
 * tells FHIR clients of an estimated birth date), in the province of Kinshasa, with an
 * identifier of the source; state.chartUrl is her chart. */
export async function registerThePatient() {
  const sources = await api("GET", "idgen/identifiersource?v=default");
  const source = sources.results[0];
  const { identifier } = await api("POST", `idgen/identifiersource/${source.uuid}/identifier`, {});
  const born = new Date();
  born.setUTCFullYear(born.getUTCFullYear() - 34);
  const patient = await api("POST", "patient", {
    person: {
      names: [{ givenName: "Grâce", familyName: "Kapinga" }],
      gender: "F",
      birthdate: born.toISOString().slice(0, 10),
      birthdateEstimated: true,
      addresses: [{ country: "République démocratique du Congo", stateProvince: "Kinshasa", preferred: true }],
    },
    identifiers: [{ identifier, identifierType: source.identifierType.uuid, preferred: true }],
  });
  state.chartUrl = `${base}/openmrs/spa/patient/${patient.uuid}/chart`;
}

/** Her visit, open, as the visit form starts it at reception: an outpatient consultation at
 * the facility, paying, in cash. */
export async function startTheVisit() {
  await api("POST", "visit", {
    patient: patientUuid(),
    visitType: "f19c6fdb-bd43-41e7-bb4c-cc892e489c25", // Consultation externe
    location: FACILITY,
    attributes: [
      { attributeType: "82af61c1-f844-463c-9b65-4de9f8cf3c48", value: "fd74fb5c-d0d7-4145-865c-ad85a298f116" }, // Détails de paiement: Payant
      { attributeType: "ed27f225-209c-4d53-b19f-2f9f9b720cdb", value: "fc99ef44-6260-44b3-90db-05e7d0a91a14" }, // Mode de paiement: Espèces
    ],
  });
}

/** The bill made with her visit at check-in (her consultation, 5000 in cash), pending, linked
 * to her open visit; state.checkInReceipt is its receipt number. */
export async function billTheCheckIn() {
  const bill = await api("POST", "billing/bill", {
    patient: patientUuid(),
    cashPoint: "fa8fab08-040b-4f5e-9a6d-e23268ccbdc5", // Caisse principale
    status: "PENDING",
    payments: [],
    lineItems: [{ billableService: "b6231a13-7cb0-4375-a4f5-2efa4a70c319", quantity: 1, price: 5000, lineItemOrder: 0 }], // Consultation générale
  });
  state.checkInReceipt = bill.receiptNumber;
}

/** Her chart open in the browser, as a journey before leaves it. */
export async function openTheChart() {
  await page.goto(state.chartUrl);
  await visible(page.getByText("Grâce Kapinga"));
}
