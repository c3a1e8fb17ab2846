// The receptionist's flow in the real O3 front end, in Debian's Chromium (run by run.sh).
// Each step waits for what a user sees at that point (the fields, the chosen location, the
// chart's widgets, loaders gone), asserts it, and only then saves its screenshot in
// artifacts/. The run fails on the first broken step, on any error the browser's console
// shows (an unknown configuration key, a missing translation…), and on any back-end
// answer of 400 or more.
import { chromium } from "playwright-core";
import { schemaPaths } from "../check-config-keys.mjs";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const base = process.env.E2E_BASE;
const password = process.env.E2E_PASSWORD;
const artifacts = join(dirname(fileURLToPath(import.meta.url)), "artifacts");
// Only this run's screenshots.
rmSync(artifacts, { recursive: true, force: true });
mkdirSync(artifacts, { recursive: true });
const basic = "Basic " + Buffer.from(`admin:${password}`).toString("base64");
// The password of the account the walk creates (it meets the default password policy).
const clerkPassword = "Accueil-2026-nuit";

async function api(method, path, body) {
  const res = await fetch(`${base}/openmrs/ws/rest/v1/${path}`, {
    method,
    headers: { Authorization: basic, "Content-Type": "application/json", Accept: "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// An existing patient to find, registered through the API with a generated identifier.
const sources = await api("GET", "idgen/identifiersource?v=default");
const source = sources.results[0];
const { identifier } = await api("POST", `idgen/identifiersource/${source.uuid}/identifier`, {});
await api("POST", "patient", {
  person: { names: [{ givenName: "Hélène", familyName: "Mbuyi" }], gender: "F", birthdate: "1988-05-17" },
  identifiers: [{ identifier, identifierType: source.identifierType.uuid, preferred: true }],
});

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "fr-FR" });
// Nothing leaves the test host.
await context.route(/^(?!http:\/\/127\.0\.0\.1)/, (route) => route.abort());
const page = await context.newPage();
const backendErrors = [];
page.on("response", (r) => {
  if (process.env.E2E_TRACE && r.url().includes("/openmrs/") && !r.url().includes("/openmrs/spa/")) console.log(`  ${r.status()} ${r.request().method()} ${r.url()}`);
  if (r.url().includes("/openmrs/") && !r.url().includes("/openmrs/spa/") && r.status() >= 400) {
    backendErrors.push(`${r.status()} ${r.request().method()} ${r.url()}`);
    // What was sent and answered, to see why.
    r.text()
      .then((body) => console.log(`  ${r.status()} answer: ${body.slice(0, 500)}\n  request: ${(r.request().postData() ?? "").slice(0, 800)}`))
      .catch(() => {});
  }
});
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
// Each step's requests with how long they took, so that a failed step can say what was slow
// (and what never finished).
const started = new Map();
let stepRequests = [];
page.on("request", (r) => started.set(r, Date.now()));
const finished = (how) => (r) => {
  const t = started.get(r);
  if (t === undefined) return;
  started.delete(r);
  stepRequests.push({ what: `${r.method()} ${r.url().replace(base, "")}`, ms: Date.now() - t, how });
};
page.on("requestfinished", finished("done"));
page.on("requestfailed", finished("failed"));
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
// when a module's script has not run 5 s after it was added, and single-spa's (#31) when a
// mounted part of the page has not updated within 3 s. Both go on once the work is done, and
// the step's own checks still decide. On this 2-core machine Chromium's main thread alone
// can take that long on the chart's pages, so they are reported as notes, with the step's
// slowest requests to show whether the server was slow, instead of failing the walk.
const SLOW_BROWSER = [/^The script at \S+ did not load within 5 seconds\./, /^single-spa minified message #31:/];
const slowNotes = [];
const consoleErrors = [];
const raceNotes = new Set();
page.on("console", (m) => {
  if (m.type() !== "error") return;
  const text = m.text();
  if (SLOW_BROWSER.some((re) => re.test(text))) slowNotes.push(text.slice(0, 200));
  else if (knownSetting(text)) raceNotes.add(text);
  else consoleErrors.push(`${text.slice(0, 300)}${m.location()?.url ? ` (${m.location().url})` : ""}`);
});
page.on("pageerror", (e) => consoleErrors.push(`uncaught: ${e.message.slice(0, 300)}`));

// The widgets the chart's summary shows with the modules in frontend/spa-modules.json.
const summaryWidgets = ["Signes vitaux", "Biométrie", "Enregistrer les signes vitaux", "Allergies", "Conditions médicales"];

// English a French screen must not show: strings the pinned modules have been seen to leave
// untranslated, and the English of the chart's main labels. The French walk fails on any.
const ENGLISH = [
  "Logout", "Log out", "Normal ranges", "View normal ranges", "Patient summary", "Record vitals",
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
];
let french = true;
async function noEnglish() {
  const text = await page.innerText("body");
  const found = ENGLISH.filter((e) => new RegExp(`(^|[^\\p{L}])${e.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|[^\\p{L}])`, "u").test(text));
  if (found.length > 0) throw new Error(`English on a French screen: ${found.join(", ")}`);
}

let n = 0;
let passed = 0;
async function step(name, fn) {
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
const visible = (locator) => locator.first().waitFor({ state: "visible", timeout: 30000 });
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

await step("login-page-in-french", async () => {
  await page.goto(`${base}/openmrs/spa/login`);
  await visible(page.getByText("Nom d'utilisateur"));
  await visible(page.getByRole("img", { name: "DSE RDC" }));
  await visible(page.getByRole("button", { name: /Continuer/ }));
  if ((await page.evaluate(() => document.documentElement.lang)) !== "fr") throw new Error("the page is not in French");
});

await step("log-in", async () => {
  await page.getByLabel("Nom d'utilisateur").fill("admin");
  await page.getByRole("button", { name: /Continuer/ }).click();
  await page.locator("input#password").fill(password);
  await page.getByRole("button", { name: "Connexion" }).click();
  await page.waitForURL(/\/login\/location/, { timeout: 30000 });
  // The location picker lists the content's login locations.
  await visible(page.getByText("Bondeko - Accueil"));
  await visible(page.getByRole("button", { name: "Valider" }));
});

await step("choose-location", async () => {
  await page.getByText("Bondeko - Accueil").click();
  await page.getByRole("button", { name: "Valider" }).click();
  await page.waitForURL(/\/home/, { timeout: 30000 });
  // The home page, with the chosen location in the header.
  await visible(page.getByRole("button", { name: /Rechercher un patient/i }));
  await visible(page.locator("header").getByText("Bondeko - Accueil"));
});

await step("search-without-accents", async () => {
  await page.getByRole("button", { name: /Rechercher un patient/i }).click();
  await page.getByRole("searchbox").first().fill("helene");
  await visible(page.getByText("Hélène Mbuyi"));
});

let chartUrl;
await step("registration-form", async () => {
  await page.goto(`${base}/openmrs/spa/patient-registration`);
  await visible(page.locator("input#givenName"));
  await page.locator("input#givenName").fill("Grâce");
  await page.locator("input#familyName").fill("Kapinga");
  await page.getByText("Femme", { exact: true }).click();
  // "Date de naissance connue ?" → Non, then an estimated age.
  await page.getByText("Non", { exact: true }).nth(1).click();
  await page.getByLabel("Âge estimé en années").fill("34");
  // The province is required by the address template; the hierarchy suggests it.
  await page.getByLabel("Province").fill("Kinshasa");
  await page.keyboard.press("Escape");
  // The form as filled, before it is sent.
  for (const [field, value] of [["input#givenName", "Grâce"], ["input#familyName", "Kapinga"]]) {
    const got = await page.locator(field).inputValue();
    if (got !== value) throw new Error(`${field} holds "${got}", not "${value}"`);
  }
  if ((await page.getByLabel("Âge estimé en années").inputValue()) !== "34") throw new Error("the estimated age was not kept");
  await visible(page.getByRole("button", { name: /Enregistrer le patient/ }));
});

await step("register-a-patient", async () => {
  await page.getByRole("button", { name: /Enregistrer le patient/ }).click();
  await page.waitForURL(/\/patient\/[0-9a-f-]{36}\/chart/, { timeout: 30000 });
  chartUrl = page.url();
  // The chart opens on the new patient, with the identifier the server generated.
  await visible(page.getByText("Grâce Kapinga"));
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const patient = await api("GET", `patient/${uuid}`);
  const generated = patient.identifiers[0].display.split(" = ")[1];
  await visible(page.getByText(generated));
});

await step("chart-summary", async () => {
  // The chart's navigation and the summary's widgets, each loaded.
  await visible(page.getByRole("link", { name: "Résumé patient" }));
  await visible(page.getByRole("link", { name: "Visites" }));
  for (const widget of summaryWidgets) await visible(page.getByText(widget, { exact: true }));
});

// Clinical care (issue 10): a visit, vital signs in it, the visit ended.
// The receipt number of the bill made at check-in.
let checkInReceipt;
await step("start-a-visit", async () => {
  await page.getByRole("button", { name: /Actions/ }).first().click();
  await page.getByRole("menuitem", { name: "Ajouter une visite" }).click();
  await visible(page.getByText("Consultation externe"));
  await page.getByText("Consultation externe", { exact: true }).click();
  // The visit form sends the patient on to the triage queue (the queues are the content's).
  await page.locator("select#queueLocation").selectOption({ label: "Bondeko - Triage" });
  // (A select's options are never "visible": wait for the service to be listed.)
  await page.locator("select#queueService option", { hasText: "Bondeko - File de triage" }).waitFor({ state: "attached", timeout: 30000 });
  await page.locator("select#queueService").selectOption({ label: "Bondeko - File de triage" });
  // Billing at check-in: a paying patient, in cash, billed for her consultation (the
  // answers are kept as visit attributes, with her number in the triage queue, and the
  // bill is made with the visit).
  await page.getByText("Payant", { exact: true }).click();
  await page.locator("#paymentMethods").click();
  await page.getByRole("option", { name: "Espèces" }).click();
  await page.locator("#billable-items").click();
  await page.getByRole("option", { name: /^Consultation générale \(Espèces: 5000\)/ }).click();
  await page.getByRole("button", { name: /^Démarrer la visite$/ }).click();
  // The banner marks the visit as the current one, and shows the queue the patient waits in.
  await visible(page.getByText("Visite en cours"));
  await visible(page.getByText("Facture créée avec succès"));
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const [visit] = (await api("GET", `visit?patient=${uuid}&v=full`)).results;
  const shown = visit.attributes.map((a) => a.display).sort().join(" | ");
  if (shown !== "Détails de paiement: Payant | Mode de paiement: fc99ef44-6260-44b3-90db-05e7d0a91a14 | Numéro dans la file d'attente: BON-001") throw new Error(`the check-in and the queue number were not kept with the visit: ${shown}`);
  const [bill] = (await api("GET", `billing/bill?patientUuid=${uuid}&v=full`)).results;
  if (bill?.status !== "PENDING" || bill.total !== 5000 || bill.visit?.uuid !== visit.uuid) throw new Error(`the check-in bill was not made: ${JSON.stringify(bill)}`);
  checkInReceipt = bill.receiptNumber;
  await visible(page.getByText("Bondeko - File de triage"));
  await visible(page.getByText("Priorité normale"));
});

await step("the-triage-nurse-calls-the-patient", async () => {
  // The service queues page lists her, waiting, with the number she was given at
  // check-in; the nurse calls her and serves her.
  await page.goto(`${base}/openmrs/spa/home/service-queues`);
  const row = page.getByRole("row", { name: /Grâce Kapinga/ });
  await visible(row.getByText("En attente"));
  await visible(row.getByText("Bondeko - File de triage"));
  await visible(page.getByRole("columnheader", { name: "Numéro de file d'attente" }).first());
  await visible(row.getByText("BON-001"));
  await row.getByRole("button", { name: "Appeler" }).click();
  const dialog = page.getByRole("dialog");
  await visible(dialog.getByText("Servir le patient"));
  await dialog.getByRole("button", { name: "Servir", exact: true }).click();
  // Serving opens her chart; the server ended the waiting entry and opened one in service.
  await page.waitForURL(/\/patient\/[0-9a-f-]{36}\/chart/, { timeout: 30000 });
  await visible(page.getByText("Grâce Kapinga"));
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const all = await api("GET", `queue-entry?patient=${uuid}&v=custom:(status:(uuid),endedAt,previousQueueEntry:(uuid))`);
  const open = all.results.filter((e) => e.endedAt === null);
  if (all.results.length !== 2 || open.length !== 1 || open[0].status.uuid !== "91ed8388-f8b6-54b5-9f7c-6360060038e3")
    throw new Error(`the patient is not in service: ${JSON.stringify(all.results)}`);
});

await step("record-vital-signs", async () => {
  await page.getByRole("button", { name: "Enregistrer les signes vitaux" }).first().click();
  // Each input's id ends with the vital it records.
  const field = (name) => page.locator(`input[id$="-${name}"]`).first();
  await visible(field("temperature"));
  await field("temperature").fill("38.6");
  await field("systolicBloodPressure").fill("150");
  await field("diastolicBloodPressure").fill("95");
  await field("pulse").fill("88");
  await field("respiratoryRate").fill("18");
  await field("oxygenSaturation").fill("97");
  await field("weight").fill("62");
  await field("height").fill("165");
  await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
  await visible(page.getByText("Signes vitaux et données biométriques enregistrés"));
  // The table shows the values, the fever and the high pressure flagged as abnormal.
  await visible(page.getByText("38.6", { exact: false }));
  await visible(page.getByText("150 / 95", { exact: false }));
  await visible(page.getByText("22.8", { exact: false }));
  // The fever and the high blood pressure are flagged against the concepts' ranges.
  if ((await page.locator('[class*="abnormal"], [class*="critical"], [class*="high"]').count()) === 0) {
    throw new Error("no value is flagged as abnormal");
  }
});

await step("clinical-forms-list", async () => {
  await page.getByRole("button", { name: "Formulaires cliniques" }).first().click();
  for (const form of ["Signes vitaux", "Consultation externe", "Inscription dans les soins VIH"]) {
    await visible(page.getByText(form, { exact: true }));
  }
});

await step("fill-the-consultation-form", async () => {
  await page.getByRole("cell", { name: "Consultation externe", exact: true }).first().getByText("Consultation externe").click();
  await visible(page.getByText("Motif de consultation"));
  await page.getByLabel("Motif de consultation").fill("Fièvre depuis trois jours");
  // A coded answer inside the examination's obs group, and free text.
  await page.getByText("Bon", { exact: true }).first().click();
  await page.getByLabel("Plan de prise en charge").fill("Test de diagnostic rapide du paludisme");
  await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
  await visible(page.getByText("Formulaire enregistré"));
  // What the server recorded: the text, and the group holding the coded answer.
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const found = await api("GET", `encounter?patient=${uuid}&encounterType=91edcf31-cf56-43c3-a7d8-b8097fbd0035&v=custom:(uuid,form:(display),obs:(display,groupMembers:(display)))`);
  if (found.results[0]?.form?.display !== "Consultation externe") throw new Error(`the encounter does not name its form: ${JSON.stringify(found.results[0]?.form)}`);
  const obs = found.results[0]?.obs ?? [];
  const displays = obs.map((o) => o.display).join(" | ");
  if (!displays.includes("Fièvre depuis trois jours")) throw new Error(`the chief complaint was not saved: ${displays}`);
  const group = obs.find((o) => (o.groupMembers ?? []).length > 0);
  if (!group || !group.groupMembers.some((m) => /Bon/.test(m.display))) throw new Error(`the examination group was not saved: ${JSON.stringify(obs)}`);
});

async function openForm(name) {
  // From a fresh chart: a closed form leaves its workspace's layer over the forms panel.
  await page.reload();
  await page.getByRole("button", { name: "Formulaires cliniques" }).first().click();
  await page.getByRole("cell", { name, exact: true }).first().getByText(name).click();
}
async function savedObs(encounterType) {
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const found = await api("GET", `encounter?patient=${uuid}&encounterType=${encounterType}&v=custom:(uuid,obs:(display))`);
  return (found.results[0]?.obs ?? []).map((o) => o.display).join(" | ");
}

await step("fill-the-vital-signs-form", async () => {
  await openForm("Signes vitaux");
  await visible(page.getByLabel("Température (°C)"));
  await page.getByLabel("Température (°C)").fill("37.2");
  await page.getByLabel("Pouls (battements/min)").fill("76");
  await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
  await visible(page.getByText("Formulaire enregistré"));
  const obs = await savedObs("023c2721-8ffa-4ce2-a1d4-7a2a3ec45f42");
  if (!obs.includes("37.2") || !obs.includes("76")) throw new Error(`the vital signs were not saved: ${obs}`);
});

await step("fill-the-hiv-enrolment-form", async () => {
  await openForm("Inscription dans les soins VIH");
  await visible(page.getByText("Stade clinique OMS"));
  await page.getByText("Stade 2", { exact: true }).click();
  await page.getByText("Oui", { exact: true }).first().click();
  await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
  await visible(page.getByText("Formulaire enregistré"));
  const obs = await savedObs("633e991f-da9d-4232-b0b2-d245cffa8701");
  if (!obs.includes("Stade")) throw new Error(`the WHO stage was not saved: ${obs}`);
});

await step("write-a-visit-note", async () => {
  await page.reload();
  await page.getByRole("button", { name: "Note de visite" }).first().click();
  await page.getByPlaceholder("Choisissez un diagnostic principal").fill("palud");
  await page.getByText("Paludisme, sans précision", { exact: true }).first().click();
  await page.getByPlaceholder("Ajouter des notes ici").fill("Fièvre, TDR du paludisme positif ; traitement par artéméther-luméfantrine.");
  await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
  await visible(page.getByText("Note de la visite enregistrée"));
  // The note's encounter and its primary diagnosis, on the server.
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const found = await api("GET", `patientdiagnoses?patient=${uuid}&v=custom:(display,rank,certainty)`);
  if (!found.results.some((d) => d.display === "Paludisme, sans précision" && d.rank === 1)) {
    throw new Error(`the diagnosis was not saved: ${JSON.stringify(found.results)}`);
  }
});

// The care record (issue 11): an allergy and a condition, from the chart's summary.
await step("record-an-allergy", async () => {
  await page.getByRole("link", { name: "Allergies", exact: true }).click();
  await page.getByRole("button", { name: /allergie ou intolérance/i }).first().click();
  const allergen = page.getByRole("combobox", { name: /Allergène/ });
  await visible(allergen);
  await allergen.fill("Amox");
  await page.getByRole("option", { name: "Amoxicilline", exact: true }).click();
  await page.getByText("Urticaire", { exact: true }).click();
  await page.getByText("Sévère", { exact: true }).click();
  await page.getByPlaceholder("Ajouter ici tous commentaires additionnels").fill("Après la première dose");
  await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
  await visible(page.getByText("Allergie enregistrée"));
  // The summary lists it with its reaction; the server keeps it as the form said.
  await visible(page.getByRole("cell", { name: "Amoxicilline" }));
  await visible(page.getByText("Urticaire").first());
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const found = await api("GET", `patient/${uuid}/allergy?v=full`);
  const a = found.results[0];
  if (found.results.length !== 1 || a.display !== "Amoxicilline" || a.allergen.allergenType !== "DRUG" || a.comment !== "Après la première dose") {
    throw new Error(`the allergy was not saved as entered: ${JSON.stringify(found.results)}`);
  }
});

await step("record-a-condition", async () => {
  await page.getByRole("link", { name: "Résumé patient" }).click();
  await page.getByRole("button", { name: /conditions? médicales?/i }).first().click();
  await page.getByPlaceholder("Rechercher des conditions médicales").fill("palud");
  await page.getByRole("menuitem", { name: "Paludisme, sans précision" }).first().click();
  await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
  await visible(page.getByText("Condition médicale enregistrée"));
  await visible(page.getByRole("cell", { name: "Paludisme, sans précision" }));
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const found = await api("GET", `condition?patientUuid=${uuid}&v=full`);
  if (found.results.length !== 1 || found.results[0].clinicalStatus !== "ACTIVE") {
    throw new Error(`the condition was not saved as active: ${JSON.stringify(found.results)}`);
  }
});

await step("record-a-vaccination", async () => {
  // In the visit, as the app requires: a dose of oral polio vaccine, labelled by the
  // schedule of the configuration.
  await page.getByRole("link", { name: "Vaccinations", exact: true }).click();
  await page.getByRole("button", { name: /vaccinations/i }).first().click();
  await page.getByRole("combobox", { name: /Vaccination/ }).first().click();
  await page.getByRole("option", { name: "Vaccin polio oral (VPO)" }).click();
  await page.getByRole("combobox", { name: /Séquence/ }).click();
  await page.getByRole("option", { name: "VPO 1" }).click();
  await page.getByLabel("Numéro de lot").fill("L-2026-117");
  await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
  await visible(page.getByText("Vaccination enregistrée avec succès"));
  await visible(page.getByText("Vaccin polio oral (VPO)").first());
  // On the server: an immunization-history group in the visit, with the lot entered.
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const found = await api("GET", `obs?patient=${uuid}&concept=CIEL:1421&v=custom:(uuid,groupMembers:(display))`);
  const members = found.results.flatMap((g) => g.groupMembers.map((m) => m.display)).join(" | ");
  if (found.results.length !== 1 || !members.includes("L-2026-117") || !members.includes("Vaccin polio oral (VPO)")) {
    throw new Error(`the vaccination was not saved as entered: ${members}`);
  }
});

// Orders and the care record (issue 11): a prescription from the order basket, changed and
// stopped; a laboratory test, picked up, resulted and completed in the laboratory app; the
// result in the chart, flagged.
const patientUuid = () => chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
async function signTheBasket({ open }) {
  // After a new prescription the basket is opened from the side menu; after a
  // discontinuation it opens by itself (waited for: opening it again would close it).
  const sign = page.getByRole("button", { name: "Signer et fermer" });
  if (open) await page.getByRole("button", { name: "Ordonnance", exact: true }).click();
  await visible(sign);
  await sign.click();
  await sign.waitFor({ state: "hidden", timeout: 30000 });
}

await step("enrol-in-a-programme", async () => {
  await page.getByRole("link", { name: "Programmes" }).click();
  await page.getByRole("button", { name: "Ajouter inscriptions aux programmes" }).click();
  await page.locator("select#program").selectOption({ label: "Programme de soins et traitement du VIH" });
  await page.locator("select#programStatus").selectOption({ label: "Pré-TARV" });
  await page.getByRole("button", { name: "Sauvegarder et fermer" }).click();
  const row = page.getByRole("row", { name: /Programme de soins et traitement du VIH/ });
  await visible(row.getByText("Pré-TARV"));
  // She starts her treatment: the enrolment's state changes.
  await row.getByRole("button").last().click();
  await page.getByRole("menuitem", { name: "Modifier" }).click();
  await page.locator("select#programStatus").selectOption({ label: "Sous traitement antirétroviral" });
  await page.getByRole("button", { name: "Sauvegarder et fermer" }).click();
  await visible(page.getByText("Enregistrement dans le programme mis à jour"));
  await visible(row.getByText("Sous traitement antirétroviral"));
  // Kept as OpenMRS keeps it: the first state ended when the second began.
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const [enrolment] = (await api("GET", `programenrollment?patient=${uuid}&v=custom:(states:(endDate,state:(concept:(display))))`)).results;
  const states = enrolment.states.map((x) => `${x.state.concept.display}:${x.endDate ? "ended" : "open"}`).sort();
  if (states.join() !== "Pré-TARV:ended,Sous traitement antirétroviral:open") throw new Error(`the states were not recorded: ${states}`);
});

await step("pin-a-note-to-the-chart", async () => {
  await page.getByRole("button", { name: "Note épinglée" }).click();
  await page.locator("textarea#sticky-note-text").fill("Vient avec sa sœur, qui traduit en lingala");
  await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
  await visible(page.getByText("Note épinglée créée"));
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const notes = await api("GET", `obs?patient=${uuid}&concept=165095AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&v=custom:(value)`);
  if (notes.results[0]?.value !== "Vient avec sa sœur, qui traduit en lingala") throw new Error(`the note was not kept: ${JSON.stringify(notes)}`);
});

await step("attach-a-photo-to-the-chart", async () => {
  // A photograph of a wound (a small PNG), as a nurse's phone would take it.
  const photo = join(mkdtempSync(join(tmpdir(), "e2e-")), "plaie-pied.png");
  writeFileSync(photo, Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAEAAAABACAIAAAAlC+aJAAAAeElEQVR4nO3PQQkAMAzAwAqrfyZrIvY4BoEIuMzZ/brhgga0oAEtaEALGtCCBrSgAS1oQAsa0IIGtKABLWhACxrQgga0oAEtaEALGtCCBrSgAS1oQAsa0IIGtKABLWhACxrQgga0oAEtaEALGtCCBrSgAS1oQAseuzfrAS2gdd8fAAAAAElFTkSuQmCC", "base64"));
  await page.getByRole("link", { name: "Pièces jointes" }).click();
  await page.getByRole("button", { name: "Ajouter pièces jointes" }).click();
  // The limits are the content's settings.
  await visible(page.getByText("La limite de fichier est 5MB. Les fichiers compatibles sont pdf, jpg, jpeg, png."));
  await page.locator('input[type="file"]').setInputFiles(photo);
  await page.locator("textarea#description").fill("Plaie du pied gauche, troisième jour");
  await page.getByRole("dialog").getByRole("button", { name: "Ajouter une pièce jointe" }).click();
  await visible(page.getByText("Ajout terminé"));
  await page.getByRole("dialog").getByRole("button", { name: "Fermer" }).click();
  // Its thumbnail is the photograph, read back from the server with the session cookie.
  const thumbnail = page.locator('img[src*="/attachment/"]').first();
  await visible(thumbnail);
  await page.waitForFunction(() => document.querySelector('img[src*="/attachment/"]')?.naturalWidth === 64, null, { timeout: 30000, polling: 200 });
  await thumbnail.click();
  await visible(page.getByText("Plaie du pied gauche, troisième jour"));
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const [kept] = (await api("GET", `attachment?patient=${uuid}&includeEncounterless=true`)).results;
  if (kept?.filename !== "plaie-pied.png" || kept.bytesContentFamily !== "IMAGE") throw new Error(`the photograph was not kept: ${JSON.stringify(kept)}`);
  await page.keyboard.press("Escape");
  await page.goto(chartUrl);
  await visible(page.getByText("Grâce Kapinga"));
});

// Billing (issue 12): the visit billed from the chart, paid at the cash desk.
let billUrl;
await step("bill-the-visit-from-the-chart", async () => {
  // The chart's billing history: the check-in's bill, then a bill made for her visit, two
  // dressings priced in the payment mode chosen.
  await page.getByRole("link", { name: "Historique des facturations" }).click();
  await visible(page.getByRole("cell", { name: checkInReceipt }));
  await page.getByRole("button", { name: "Créer une facture" }).first().click();
  const search = page.getByRole("combobox", { name: "Rechercher des services" });
  for (const [service, quantity] of [["Pansement simple", 2]]) {
    await search.click();
    await search.fill(service.slice(0, 6));
    await page.getByRole("option", { name: service }).click();
    const card = page.locator("div").filter({ has: page.getByText(service, { exact: true }) }).filter({ has: page.getByRole("combobox") }).last();
    await card.getByRole("combobox").click();
    await page.getByRole("option", { name: /^Espèces - / }).click();
    if (quantity > 1) await card.locator('input[id^="quantity-"]').fill(String(quantity));
  }
  await visible(page.getByText(/Total général.*3[\s,.]?001/));
  await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
  await visible(page.getByText("Facture traitée"));
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const bill = (await api("GET", `billing/bill?patientUuid=${uuid}&v=full`)).results.find((b) => b.receiptNumber !== checkInReceipt);
  if (bill?.status !== "PENDING" || bill.total !== 3001 || !bill.visit) throw new Error(`the bill was not kept as made: ${JSON.stringify(bill)}`);
  billUrl = `${base}/openmrs/spa/home/billing/patient/${uuid}/${bill.uuid}`;
  await visible(page.getByRole("cell", { name: bill.receiptNumber }));
});

await step("the-cashier-takes-the-payment", async () => {
  // At the cash desk: the bill among those awaiting payment, finalised, paid in cash (the
  // amount due exactly, with its hundredths), and its receipt printed from the server.
  await page.goto(`${base}/openmrs/spa/home/billing`);
  await visible(page.getByRole("row", { name: /Grâce Kapinga/ }).first());
  await page.goto(billUrl);
  await page.getByRole("button", { name: "Finaliser la facture" }).first().click();
  await page.getByRole("dialog").getByRole("button", { name: "Finaliser" }).click();
  await visible(page.getByText("La facture a été finalisée"));
  await page.locator("#paymentMethod").click();
  await page.getByRole("option", { name: "Espèces" }).click();
  await page.getByPlaceholder("Saisir le montant").fill("3001");
  await page.getByRole("button", { name: "Enregistrer le paiement" }).click();
  await visible(page.getByText("Paiement enregistré"));
  const bill = await api("GET", `billing/bill/${billUrl.split("/").pop()}`);
  if (bill.status !== "PAID" || bill.payments.length !== 1 || bill.payments[0].amountTendered !== 3001) throw new Error(`the payment was not kept: ${JSON.stringify(bill)}`);
  await visible(page.getByText("PAYÉ"));
  const download = page.waitForEvent("download", { timeout: 30000 });
  await page.getByRole("button", { name: "Imprimer le reçu" }).click();
  const receipt = await (await download).path();
  const head = readFileSync(receipt).subarray(0, 8).toString();
  if (head !== "%PDF-1.4") throw new Error(`the receipt is not a PDF: ${head}`);
  await page.goto(chartUrl);
  await visible(page.getByText("Grâce Kapinga"));
});

await step("prescribe-a-medicine", async () => {
  await page.getByRole("link", { name: "Médicaments", exact: true }).click();
  await page.getByRole("button", { name: "Ajouter traitement en cours" }).click();
  await page.getByRole("searchbox").last().fill("parac");
  await visible(page.getByText("2 résultats pour « parac »"));
  // The two paracetamol forms; the tablet is listed second.
  await page.getByRole("button", { name: "Prescrire" }).nth(1).click();
  await visible(page.getByText("Paracétamol 500 mg comprimé (500 mg)"));
  await page.locator("input#doseSelection").fill("1");
  await page.locator("input#editRoute").click();
  await page.locator("input#editRoute").fill("orale");
  await page.getByRole("option", { name: "Voie orale" }).click();
  await page.locator("input#editFrequency").click();
  await page.locator("input#editFrequency").fill("Trois");
  await page.getByRole("option", { name: "Trois fois par jour" }).click();
  await page.locator("input#durationInput").fill("5");
  await page.locator("input#quantityDispensed").fill("15");
  await page.locator("input#prescriptionRefills").fill("0");
  await page.locator("input#indication").fill("Fièvre");
  await page.getByRole("button", { name: "Enregistrer cette prescription" }).click();
  await page.getByRole("button", { name: "Enregistrer cette prescription" }).waitFor({ state: "hidden", timeout: 30000 });
  await signTheBasket({ open: true });
  await visible(page.getByText("Traitements en cours"));
  await visible(page.getByText(/trois fois par jour — pour 5 jours/));
  const [order] = (await api("GET", `order?patient=${patientUuid()}&status=active&v=full`)).results;
  if (order?.drug?.display !== "Paracétamol 500 mg comprimé" || order.quantity !== 15 || !order.autoExpireDate || order.orderReasonNonCoded !== "Fièvre") {
    throw new Error(`the prescription was not saved as entered: ${JSON.stringify(order)}`);
  }
});

await step("change-the-prescription", async () => {
  // Modify: two tablets instead of one (a revision that stops the first order). The form
  // starts a revision at least a second after the order it revises and refuses a start in
  // the future, so a revision within a second of signing (only a script is that fast)
  // waits for that second to pass.
  const [signed] = (await api("GET", `order?patient=${patientUuid()}&status=active`)).results;
  await page.waitForFunction((t) => Date.now() > t + 1000, Date.parse(signed.dateActivated.replace(/([+-]\d\d)(\d\d)$/, "$1:$2")));
  await page.locator("table").first().getByRole("button").last().click();
  await page.getByRole("menuitem", { name: "Modifier" }).click();
  await page.locator("input#doseSelection").fill("2");
  await page.getByRole("button", { name: "Enregistrer cette prescription" }).click();
  await page.getByRole("button", { name: "Enregistrer cette prescription" }).waitFor({ state: "hidden", timeout: 30000 });
  await visible(page.locator("table").first().getByText(/2 comprimé/));
  const [revised] = (await api("GET", `order?patient=${patientUuid()}&status=active`)).results;
  if (revised?.action !== "REVISE" || revised.previousOrder?.uuid !== signed.uuid) throw new Error(`the prescription was not revised: ${JSON.stringify(revised)}`);
});

await step("the-pharmacy-dispenses-it", async () => {
  await page.goto(`${base}/openmrs/spa/dispensing`);
  await page.getByRole("tab", { name: "Ordonnances actives" }).click();
  const row = page.getByRole("tabpanel").filter({ visible: true }).locator("tbody tr").filter({ hasText: "Grâce Kapinga" }).first();
  await row.getByRole("button").first().click();
  await visible(page.getByText("Paracétamol 500 mg comprimé").first());
  await page.getByRole("button", { name: "Délivrer", exact: true }).first().click();
  // The form holds the prescription's quantity, dose, route and frequency.
  if ((await page.locator("input#quantity").inputValue()) !== "15") throw new Error("the dispense form does not hold the prescribed quantity");
  await page.getByRole("button", { name: "Délivrer une prescription" }).click();
  await visible(page.getByText("Prescription terminée"));
  const [order] = (await api("GET", `order?patient=${patientUuid()}&status=active&v=full`)).results;
  const dispenses = await fetch(`${base}/openmrs/ws/fhir2/R4/MedicationDispense?patient=${patientUuid()}`, { headers: { Authorization: basic } }).then((r) => r.json());
  if (order?.fulfillerStatus !== "COMPLETED" || dispenses.total !== 1 || dispenses.entry[0].resource.quantity.value !== 15) {
    throw new Error(`the dispense was not recorded: ${JSON.stringify({ status: order?.fulfillerStatus, dispenses })}`);
  }
  await page.goto(`${base}/openmrs/spa/patient/${patientUuid()}/chart/Medications`);
  await visible(page.getByText(/2 comprimé/));
});

await step("stop-the-prescription", async () => {
  // A discontinuation signed from the basket; it moves to the past treatments.
  await page.locator("table").first().getByRole("button").last().click();
  await page.getByRole("menuitem", { name: "Interrompre" }).click();
  await signTheBasket({ open: false });
  await visible(page.getByText("Aucun(e) traitement en cours à afficher pour ce patient."));
  const all = (await api("GET", `order?patient=${patientUuid()}&status=any`)).results.map((o) => o.display.split(")")[0] + ")");
  if (all.join(",") !== "(DISCONTINUE),(REVISE),(NEW)") throw new Error(`the prescription's history is not NEW, REVISE, DISCONTINUE: ${all}`);
});

await step("renew-the-prescription", async () => {
  // The stopped treatment, renewed from the past treatments and signed: a new active order
  // that points back to it (core leaves a renewed order's predecessor as it is).
  const stopped = (await api("GET", `order?patient=${patientUuid()}&status=any&v=custom:(uuid,action)`)).results.find((o) => o.action === "REVISE");
  // The revised prescription (two tablets), not the first one it replaced.
  const past = page.locator("table").filter({ hasText: "Paracétamol 500 mg comprimé" }).last();
  await past.getByRole("row").filter({ hasText: "2 comprimé" }).getByRole("button").last().click();
  await page.getByRole("menuitem", { name: "Renouveler" }).click();
  await signTheBasket({ open: false });
  await visible(page.locator("table").first().getByText(/2 comprimé/));
  const active = (await api("GET", `order?patient=${patientUuid()}&status=active&v=custom:(action,previousOrder:(uuid),fulfillerStatus)`)).results;
  if (active.length !== 1 || active[0].action !== "RENEW" || active[0].previousOrder?.uuid !== stopped?.uuid || active[0].fulfillerStatus !== null)
    throw new Error(`the prescription was not renewed: ${JSON.stringify({ stopped, active })}`);
});

await step("the-pharmacy-pauses-then-closes-it", async () => {
  await page.goto(`${base}/openmrs/spa/dispensing`);
  await page.getByRole("tab", { name: "Ordonnances actives" }).click();
  const row = page.getByRole("tabpanel").filter({ visible: true }).locator("tbody tr").filter({ hasText: "Grâce Kapinga" }).first();
  await row.getByRole("button").first().click();
  // Paused, with a reason from the content's value set.
  await page.getByRole("button", { name: "Interruption", exact: true }).first().click();
  await page.locator("input#reasonForPause").click();
  await page.getByRole("option", { name: "Rupture de stock" }).click();
  await page.locator("form").filter({ has: page.locator("input#reasonForPause") }).getByRole("button", { name: "Interruption", exact: true }).click();
  await visible(page.getByText("Dispensation interrompue."));
  let [order] = (await api("GET", `order?patient=${patientUuid()}&status=active&v=custom:(uuid,fulfillerStatus)`)).results;
  if (order?.fulfillerStatus !== "ON_HOLD") throw new Error(`the pause did not put the order on hold: ${JSON.stringify(order)}`);
  // Then closed: the pharmacy will not dispense it.
  await page.locator("button", { hasText: "Terminer" }).filter({ visible: true }).first().click();
  // (The close form's reason field has the pause form's id.)
  const closeForm = page.locator("form").filter({ hasText: "Raison de l'arrêt" });
  await closeForm.locator("input#reasonForPause").click();
  await page.getByRole("option", { name: "Patient absent" }).click();
  await closeForm.locator("button", { hasText: "Terminer" }).click();
  await visible(page.getByText("Ordonnance fermée."));
  [order] = (await api("GET", `order?patient=${patientUuid()}&status=active&v=custom:(uuid,fulfillerStatus)`)).results;
  const dispenses = await fetch(`${base}/openmrs/ws/fhir2/R4/MedicationDispense?patient=${patientUuid()}`, { headers: { Authorization: basic } }).then((r) => r.json());
  const statuses = dispenses.entry.map((e) => e.resource.status).sort().join();
  if (order?.fulfillerStatus !== "DECLINED" || statuses !== "completed,declined,on-hold")
    throw new Error(`the close was not recorded: ${JSON.stringify({ order, statuses })}`);
  await page.goto(`${base}/openmrs/spa/patient/${patientUuid()}/chart/Medications`);
  await visible(page.getByText(/2 comprimé/));
});

await step("order-a-laboratory-test", async () => {
  await page.getByRole("button", { name: "Ordonnance", exact: true }).click();
  // The basket's "Ajouter" beside its laboratory tests.
  const tests = page.getByText(/^Analyses \(\d+\)$/).locator("xpath=ancestor::*[.//button][1]");
  await tests.getByRole("button", { name: "Ajouter", exact: true }).click();
  await page.getByRole("searchbox").last().fill("hémoglobine");
  // Filtered: haemoglobin, then glycated haemoglobin.
  await visible(page.getByText("2 résultats pour « hémoglobine »"));
  await page.getByRole("button", { name: "Prescrire" }).first().click();
  await page.locator("select#priorityInput").selectOption("STAT");
  await page.locator("textarea#additionalInstructionsInput").fill("Pâleur, suspicion d'anémie");
  await page.getByRole("button", { name: "Enregistrer la prescription" }).click();
  await page.getByRole("button", { name: "Signer et fermer" }).click();
  await page.getByRole("button", { name: "Signer et fermer" }).waitFor({ state: "hidden", timeout: 30000 });
  await page.getByRole("link", { name: "Ordonnances", exact: true }).click();
  await visible(page.getByRole("cell", { name: "Hémoglobine" }));
  await visible(page.getByRole("cell", { name: "Demande d'examen" }));
});

await step("laboratory-enters-the-result", async () => {
  await page.goto(`${base}/openmrs/spa/home/laboratory`);
  await visible(page.getByRole("tab", { name: "Examens prescrits" }));
  const row = () => page.getByRole("tabpanel").filter({ visible: true }).locator("tbody tr").filter({ hasText: "Grâce Kapinga" }).first();
  await row().getByRole("button").first().click();
  await page.getByRole("button", { name: "Sélectionner la demande" }).first().click();
  await page.getByRole("dialog").getByRole("button", { name: "Sélectionner la demande de laboratoire" }).click();
  await page.getByRole("tab", { name: "En cours" }).click();
  await row().getByRole("button").first().click();
  await page.getByRole("button", { name: "Ajouter des résultats de laboratoire" }).first().click();
  await visible(page.getByText("Hémoglobine (0 - 25 g/dL)"));
  await page.locator('input[name="21AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]').fill("9.5");
  await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
  await page.getByRole("tab", { name: "Terminé" }).click();
  await visible(page.getByRole("tabpanel").filter({ visible: true }).getByText("Grâce Kapinga"));
  const [test] = (await api("GET", `order?patient=${patientUuid()}&orderTypes=52a447d3-a64a-11e3-9aeb-50e549534c5e&v=full`)).results.filter((o) => o.action === "NEW");
  if (test?.fulfillerStatus !== "COMPLETED" || !test.dateStopped) throw new Error(`the test order was not completed: ${JSON.stringify(test)}`);
});

await step("the-result-in-the-chart", async () => {
  await page.goto(`${base}/openmrs/spa/patient/${patientUuid()}/chart/Results`);
  await visible(page.getByText("Numération formule sanguine").first());
  // Below the content's reference range (12–16 g/dL): flagged low.
  await visible(page.getByText(/9\.5 g\/dL/).first());
  await visible(page.getByText(/12 – 16/).first());
});

// The ward (issue 12): an administrator puts beds in the observation ward; the clinician
// asks for her admission with the content's form; the observation ward's nurse sees the
// request and admits her to a bed, the ward asks for her transfer to the maternity, which
// accepts her (without a bed: it has none), then discharges her.
const OBSERVATION_WARD = "c0a020aa-4723-4dc4-b19f-2cd20cacd064";
const RECEPTION = "5a21f7b4-943d-4182-906c-ec6b27e4c6a8";
const MATERNITY = "6a60d256-2ed9-43cc-a143-f9a4907fa60b";
// The ward page shows the ward the nurse works in: her session's location, as the location
// picker sets it (the app's extension does not see a ward named in its URL).
async function workAt(location) {
  await page.evaluate(async (uuid) => {
    const r = await fetch("/openmrs/ws/rest/v1/session", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ sessionLocation: uuid }) });
    if (!r.ok) throw new Error(`session location: ${r.status}`);
  }, location);
}
await step("an-administrator-sets-up-beds", async () => {
  // On the bed management pages: a bed type, then two beds side by side in the
  // observation ward (the maternity keeps none).
  await page.goto(`${base}/openmrs/spa/bed-management/bed-types`);
  await page.getByRole("button", { name: "Ajouter un type de lit" }).first().click();
  await page.locator("#bedName").fill("Lit standard");
  await page.locator("#displayName").fill("Lit standard");
  await page.locator("#description").fill("Lit d'adulte");
  await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
  await visible(page.getByText("Type de lit créé"));
  // (The bed pages' own left panel; the application's menu holds the same links, hidden.)
  const bedPages = page.getByRole("navigation", { name: "Panneau gauche de gestion du lit" });
  await bedPages.getByRole("link", { name: "Attribution des lits" }).click();
  for (const [number, column] of [["OBS-1", "1"], ["OBS-2", "2"]]) {
    await page.getByRole("button", { name: "Ajouter un lit" }).first().click();
    await page.locator("#bedNumber").fill(number);
    await page.locator("#bedRow").fill("1");
    await page.locator("#bedColumn").fill(column);
    await page.locator("#location").click();
    await page.getByRole("option", { name: "Bondeko - Salle d'observation" }).click();
    await page.locator("select#occupancyStatus").selectOption("AVAILABLE");
    await page.locator("select#bedType").selectOption("Lit standard");
    await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
    await visible(page.getByText("Lit créé avec succès"));
  }
  await bedPages.getByRole("link", { name: "Résumé" }).click();
  await visible(page.getByText("Voir les lits"));
  const wards = await api("GET", `admissionLocation/${OBSERVATION_WARD}?v=full`);
  if (wards.totalBeds !== 2 || wards.bedLayouts.map((b) => b.bedNumber).join() !== "OBS-1,OBS-2") throw new Error(`the beds were not kept: ${JSON.stringify(wards)}`);
});

await step("request-an-admission", async () => {
  await page.goto(chartUrl);
  await visible(page.getByText("Grâce Kapinga"));
  await page.getByRole("button", { name: "Formulaires cliniques" }).first().click();
  await page.getByRole("cell", { name: "Demande d'hospitalisation", exact: true }).first().getByText("Demande d'hospitalisation").click();
  await visible(page.getByText("Service d'hospitalisation"));
  await page.getByText("Hospitaliser", { exact: true }).click();
  const ward = page.getByRole("combobox", { name: /Service d'hospitalisation/ });
  await ward.click();
  await ward.fill("obser");
  await page.getByRole("option", { name: "Bondeko - Salle d'observation" }).click();
  await page.getByLabel("Motif de l'hospitalisation").fill("Paludisme grave, surveillance de 24 heures");
  await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
  await visible(page.getByText("Formulaire enregistré"));
  const pending = await api("GET", `emrapi/inpatient/request?patients=${patientUuid()}`);
  if (pending.results[0]?.dispositionType !== "ADMIT") throw new Error(`no admission request: ${JSON.stringify(pending)}`);
});

await step("the-ward-admits-her", async () => {
  await workAt(OBSERVATION_WARD);
  await page.goto(`${base}/openmrs/spa/home/ward`);
  await visible(page.locator("header").getByText("Bondeko - Salle d'observation"));
  await visible(page.getByText("1 demande d'admission"));
  await page.getByRole("button", { name: "Gérer" }).click();
  await visible(page.getByText("Grâce Kapinga").first());
  await visible(page.getByText("Paludisme grave, surveillance de 24 heures").first());
  await page.getByRole("button", { name: "Admettre le patient" }).first().click();
  // The ward has beds: the nurse puts her in one.
  await page.getByLabel(/^OBS-1/).check({ force: true });
  await page.getByRole("button", { name: "Admettre", exact: true }).click();
  await visible(page.getByText(/Grâce Kapinga est admis et assigné au lit OBS-1/));
  const [bed] = (await api("GET", `beds?patientUuid=${patientUuid()}`)).results;
  if (bed?.bedNumber !== "OBS-1") throw new Error(`she is not in her bed: ${JSON.stringify(bed)}`);
  const admitted = await api("GET", `emrapi/inpatient/admission?currentInpatientLocation=${OBSERVATION_WARD}`);
  if (admitted.results.length !== 1) throw new Error(`she is not on the ward: ${JSON.stringify(admitted)}`);
});

await step("she-is-transferred-to-the-maternity", async () => {
  // The observation ward asks for her transfer to the maternity (a ward of her visit's
  // facility, as the picker offers them)…
  await page.locator('button[class*="wardPatientCardButton"]').first().dispatchEvent("click");
  await page.getByRole("button", { name: "Transferts" }).first().click();
  await page.getByText("Bondeko - Maternité", { exact: true }).click();
  await page.locator('textarea[name="note"]').fill("Accouchement imminent");
  await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
  await visible(page.getByText("Demande de transfert créée pour Grâce Kapinga"));
  // …and the maternity's midwife accepts her.
  await workAt(MATERNITY);
  await page.goto(`${base}/openmrs/spa/home/ward`);
  await visible(page.locator("header").getByText("Bondeko - Maternité"));
  await page.getByRole("button", { name: "Gérer" }).click();
  await page.getByRole("button", { name: "Transférer le patient" }).first().click();
  // The maternity has no beds: she comes without one, and leaves her bed in the
  // observation ward free.
  await visible(page.getByText("Aucun lit configuré pour Bondeko - Maternité"));
  await page.getByRole("button", { name: "Admettre", exact: true }).click();
  await visible(page.getByText(/Grâce Kapinga a été admis en Bondeko - Maternité/));
  const beds = await api("GET", `beds?patientUuid=${patientUuid()}`);
  if (beds.results.length !== 0) throw new Error(`her bed in the observation ward was not freed: ${JSON.stringify(beds)}`);
  const there = await api("GET", `emrapi/inpatient/admission?currentInpatientLocation=${MATERNITY}`);
  if (there.results.length !== 1) throw new Error(`she is not at the maternity: ${JSON.stringify(there)}`);
});

await step("she-leaves-the-ward", async () => {
  // The card is one button over its rows (with no size of its own in this build).
  await page.locator('button[class*="wardPatientCardButton"]').first().dispatchEvent("click");
  await page.getByRole("button", { name: "Sortie" }).first().click();
  await page.getByRole("button", { name: "Confirmer la sortie" }).click();
  await visible(page.getByText(/Patient sorti/));
  const left = await api("GET", `emrapi/inpatient/admission?patients=${patientUuid()}`);
  if (left.results.length !== 0) throw new Error(`she is still on the ward: ${JSON.stringify(left)}`);
  // Back at reception, where the rest of the day happens.
  await workAt(RECEPTION);
  await page.goto(chartUrl);
  await visible(page.getByText("Grâce Kapinga"));
  await visible(page.locator("header").getByText("Bondeko - Accueil"));
});

await step("end-the-visit", async () => {
  await page.getByRole("button", { name: /Actions/ }).first().click();
  await page.getByRole("menuitem", { name: /Terminer la visite|Clôturer la visite/ }).first().click();
  const dialog = page.getByRole("dialog");
  await visible(dialog.getByText(/clôturer la visite en cours/));
  await dialog.getByRole("button", { name: /Terminer la visite|Clôturer la visite/ }).click();
  await page.getByText("Visite en cours").first().waitFor({ state: "hidden", timeout: 30000 });
});

await step("test-results", async () => {
  // The results dashboard draws the vital-signs set from obstree: the walk's temperature.
  await page.getByRole("link", { name: /^Résultats/ }).first().click();
  await visible(page.getByText("Signes vitaux").first());
  await visible(page.getByText("Température").first());
  await visible(page.getByText("38.6").first());
});

await step("visits-history", async () => {
  await page.getByRole("link", { name: "Visites" }).click();
  // The ended visit, of the type chosen; its encounters, opened: the vital signs and the
  // consultation form.
  await visible(page.getByRole("tab", { name: "Formulaires remplis" }));
  await visible(page.getByRole("cell", { name: "Consultation externe" }));
  // The visit's diagnosis, from the visit note.
  await visible(page.getByText("Paludisme, sans précision").first());
  await page.getByRole("tab", { name: "Toutes les consultations" }).click();
  await visible(page.getByRole("cell", { name: "Signes vitaux" }).first());
  await visible(page.getByRole("cell", { name: "Consultation", exact: true }).first());
});

await step("edit-the-saved-form", async () => {
  const row = page.getByRole("row", { name: /Consultation externe.*Consultation externe/ }).first();
  await row.getByRole("button").first().click();
  await page.locator("table").getByRole("button", { name: /^Modifier/ }).first().click();
  const complaint = page.getByLabel("Motif de consultation");
  await visible(complaint);
  if ((await complaint.inputValue()) !== "Fièvre depuis trois jours") throw new Error("the form did not open on the saved values");
  await complaint.fill("Fièvre et céphalées depuis trois jours");
  await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
  await visible(page.getByText("Dossier mis à jour"));
  // The new value is current; the old one is kept, voided, as its previous version.
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const found = await api("GET", `obs?patient=${uuid}&includeAll=true&v=custom:(display,voided,previousVersion:(uuid))`);
  const current = found.results.find((o) => !o.voided && o.display.includes("céphalées"));
  const old = found.results.find((o) => o.voided && o.display.includes("Fièvre depuis trois jours"));
  if (!current || !old || !current.previousVersion) throw new Error(`the edit was not recorded as a new version: ${JSON.stringify(found.results)}`);
  await page.getByRole("button", { name: /Fermer|Close/ }).first().click().catch(() => {});
});

await step("delete-an-encounter", async () => {
  // From a fresh page, so that only this row is open, on its observations and actions.
  await page.reload();
  await page.getByRole("tab", { name: "Toutes les consultations" }).click();
  const row = page.getByRole("row", { name: /Signes vitaux/ }).first();
  await visible(row);
  const vitalsRows = await page.evaluate(() => [...document.querySelectorAll("tr")].filter((r) => r.innerText.includes("Signes vitaux")).length);
  await row.getByRole("button").first().click();
  await page.locator("table").getByRole("button", { name: /Supprimer/ }).first().click();
  const dialog = page.getByRole("dialog");
  await visible(dialog.getByText(/supprimer cette consultation/));
  await dialog.getByRole("button", { name: "Supprimer" }).click();
  await visible(page.getByText("La consultation a été supprimée"));
  // One vital-signs row fewer.
  await page.waitForFunction(
    (before) => [...document.querySelectorAll("tr")].filter((r) => r.innerText.includes("Signes vitaux")).length < before,
    vitalsRows,
    { timeout: 30000, polling: 200 },
  );
  // Voided on the server, kept with why and by whom.
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const all = await api("GET", `encounter?patient=${uuid}&encounterType=023c2721-8ffa-4ce2-a1d4-7a2a3ec45f42&includeAll=true&v=custom:(uuid,voided)`);
  if (!all.results.some((e) => e.voided === true)) throw new Error(`the vital-signs encounter was not voided: ${JSON.stringify(all)}`);
});

// Appointments (issue 12): booked from the chart; at reception her arrival starts her visit
// and sends her to triage; her check-out completes the appointment and closes the visit; a
// follow-up is moved to the afternoon, then cancelled; a missed vaccination is marked so.
await step("book-an-appointment", async () => {
  await page.goto(chartUrl);
  await page.getByRole("link", { name: "Rendez-vous" }).click();
  await page.locator("main").getByRole("button", { name: "Ajouter" }).last().click();
  await page.locator("select#location").selectOption({ label: "Bondeko - Accueil" });
  await page.locator("select#service").selectOption({ label: "Consultation prénatale" });
  await page.locator("select#appointmentType").selectOption({ label: "Programmé" });
  await page.locator("#time-picker").fill("10:00");
  await page.locator("#time-picker-select-1").selectOption("AM");
  await page.locator("#duration").fill("30");
  await page.locator("select#provider").selectOption({ index: 1 });
  await page.locator("#appointmentNote").fill("Deuxième consultation prénatale");
  await page.getByRole("button", { name: "Sauvegarder et fermer" }).click();
  await visible(page.getByText("Rendez-vous programmé"));
  await page.getByRole("tab", { name: "Aujourd’hui" }).click();
  await visible(page.getByRole("cell", { name: "Deuxième consultation prénatale" }));
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const booked = await api("POST", "appointments/search", { patientUuid: uuid, startDate: new Date(Date.now() - 86400e3).toISOString() });
  if (booked.length !== 1 || booked[0].status !== "Scheduled" || booked[0].service.name !== "Consultation prénatale" || !/^RDV-\d{6}$/.test(booked[0].appointmentNumber))
    throw new Error(`the appointment was not booked as asked: ${JSON.stringify(booked)}`);
});

await step("she-arrives-for-her-appointment", async () => {
  await page.goto(`${base}/openmrs/spa/home/appointments`);
  const row = page.getByRole("row", { name: /Grâce Kapinga/ });
  await visible(row.getByText("Consultation prénatale"));
  await row.getByRole("button", { name: "Arrivée" }).click();
  // She has no visit open: her arrival starts one, and sends her to the triage queue.
  await page.getByRole("radio", { name: "Consultation prénatale" }).check({ force: true });
  await page.locator("select#queueLocation").selectOption({ label: "Bondeko - Triage" });
  await page.locator("select#queueService option", { hasText: "Bondeko - File de triage" }).waitFor({ state: "attached", timeout: 30000 });
  await page.locator("select#queueService").selectOption({ label: "Bondeko - File de triage" });
  await page.getByRole("button", { name: /^Démarrer la visite$/ }).click();
  await visible(page.getByText("La visite a démarré et le rendez-vous est enregistré comme arrivé"));
  await visible(row.getByText("Arrivé", { exact: true }));
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const [arrived] = await api("POST", "appointments/search", { patientUuid: uuid, startDate: new Date(Date.now() - 86400e3).toISOString() });
  const visits = await api("GET", `visit?patient=${uuid}&includeInactive=false&v=custom:(visitType:(display))`);
  if (arrived.status !== "CheckedIn" || visits.results[0]?.visitType.display !== "Consultation prénatale")
    throw new Error(`her arrival was not recorded: ${JSON.stringify({ arrived, visits })}`);
});

await step("she-leaves-at-the-end-of-her-appointment", async () => {
  const row = page.getByRole("row", { name: /Grâce Kapinga/ });
  await row.getByRole("button", { name: "Sortie" }).click();
  const dialog = page.getByRole("dialog");
  await visible(dialog.getByText(/clôturera la visite active/));
  await dialog.getByRole("button", { name: "Sortie" }).click();
  await visible(page.getByText("Rendez-vous terminé et visite clôturée"));
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const [done] = await api("POST", "appointments/search", { patientUuid: uuid, startDate: new Date(Date.now() - 86400e3).toISOString() });
  const open = await api("GET", `visit?patient=${uuid}&includeInactive=false`);
  if (done.status !== "Completed" || open.results.length !== 0) throw new Error(`her check-out was not recorded: ${JSON.stringify({ done, open })}`);
});

await step("reschedule-a-follow-up", async () => {
  // A follow-up booked from the chart at 11:00, then moved to the afternoon (within the
  // service's hours, which the form checks through the conflicts call).
  await page.goto(chartUrl);
  await page.getByRole("link", { name: "Rendez-vous" }).click();
  await page.locator("main").getByRole("button", { name: "Ajouter" }).last().click();
  await page.locator("select#location").selectOption({ label: "Bondeko - Consultation" });
  await page.locator("select#service").selectOption({ label: "Consultation de suivi" });
  await page.locator("select#appointmentType").selectOption({ label: "Programmé" });
  await page.locator("#time-picker").fill("11:00");
  await page.locator("#time-picker-select-1").selectOption("AM");
  await page.locator("#duration").fill("15");
  await page.locator("#appointmentNote").fill("Contrôle après le paludisme");
  await page.getByRole("button", { name: "Sauvegarder et fermer" }).click();
  await visible(page.getByText("Rendez-vous programmé"));
  await page.getByRole("tab", { name: "Aujourd’hui" }).click();
  const row = page.getByRole("row", { name: /Contrôle après le paludisme/ });
  await row.getByRole("button").last().click();
  await page.getByRole("menuitem", { name: "Modifier" }).click();
  await page.locator("#time-picker").fill("02:30");
  await page.locator("#time-picker-select-1").selectOption("PM");
  await page.getByRole("button", { name: "Sauvegarder et fermer" }).click();
  await visible(page.getByText("Rendez-vous modifié"));
  const booked = await api("POST", "appointments/search", { patientUuid: patientUuid(), startDate: new Date(Date.now() - 86400e3).toISOString() });
  const followUp = booked.find((a) => a.comments === "Contrôle après le paludisme");
  const at = new Date(followUp?.startDateTime);
  if (!followUp || followUp.status !== "Scheduled" || at.getHours() !== 14 || at.getMinutes() !== 30)
    throw new Error(`the follow-up was not moved: ${JSON.stringify(followUp)}`);
});

await step("cancel-the-follow-up", async () => {
  const row = page.getByRole("row", { name: /Contrôle après le paludisme/ });
  await row.getByRole("button").last().click();
  await page.getByRole("menuitem", { name: "Annuler" }).click();
  const dialog = page.getByRole("dialog");
  await visible(dialog.getByText(/annuler ce rendez-vous/i));
  await dialog.getByRole("button", { name: "Annuler le rendez-vous" }).click();
  await visible(page.getByText("Rendez-vous annulé avec succès"));
  const booked = await api("POST", "appointments/search", { patientUuid: patientUuid(), startDate: new Date(Date.now() - 86400e3).toISOString() });
  const followUp = booked.find((a) => a.comments === "Contrôle après le paludisme");
  if (followUp?.status !== "Cancelled") throw new Error(`the follow-up was not cancelled: ${JSON.stringify(followUp)}`);
});

await step("an-appointment-is-missed", async () => {
  // A vaccination she did not come to this morning, marked missed from the day's list.
  const services = await api("GET", "appointmentService/all/default");
  const vaccination = services.find((s) => s.name === "Vaccination");
  const morning = new Date();
  morning.setHours(8, 0, 0, 0);
  await api("POST", "appointment", {
    patientUuid: patientUuid(), serviceUuid: vaccination.uuid, appointmentKind: "Scheduled", status: "",
    startDateTime: morning.toISOString(), endDateTime: new Date(morning.getTime() + 10 * 60e3).toISOString(),
    locationUuid: "5a21f7b4-943d-4182-906c-ec6b27e4c6a8", providers: [], comments: "Rappel VPO",
  });
  await page.goto(`${base}/openmrs/spa/home/appointments`);
  const row = page.getByRole("row", { name: /Grâce Kapinga.*Vaccination/ });
  await visible(row);
  await row.locator('input[type="checkbox"]').check({ force: true });
  await page.getByRole("button", { name: "Changer le statut" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("combobox").first().click();
  await page.getByRole("option", { name: "Manqué" }).click();
  await dialog.getByRole("button", { name: "Sauvegarder et fermer" }).click();
  await visible(page.getByText("Rendez-vous mis à jour"));
  const booked = await api("POST", "appointments/search", { patientUuid: patientUuid(), startDate: new Date(Date.now() - 86400e3).toISOString() });
  const missed = booked.find((a) => a.comments === "Rappel VPO");
  if (missed?.status !== "Missed") throw new Error(`the vaccination was not marked missed: ${JSON.stringify(missed)}`);
});

await step("edit-the-patient", async () => {
  await page.goto(chartUrl);
  await page.getByRole("button", { name: /Actions/ }).first().click();
  await page.getByRole("menuitem", { name: "Modifier le patient" }).click();
  await page.waitForURL(/\/edit/, { timeout: 30000 });
  // The form opens on what was registered: her estimated age, her province.
  await visible(page.locator("input#givenName"));
  if ((await page.getByLabel("Âge estimé en années").inputValue()) !== "34") throw new Error("the estimated age was not read back");
  if ((await page.locator("input#stateProvince").inputValue()) !== "Kinshasa") throw new Error("the province was not read back");
  await page.locator("input#cityVillage").fill("Lingwala");
  await page.keyboard.press("Escape");
  await page.locator("input#phone").fill("0812345678");
  await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
  await visible(page.getByText("Les informations du patient ont été modifiées"));
  // The new address is the preferred one and keeps the province; the age stays estimated.
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const person = await api("GET", `person/${uuid}?v=custom:(birthdateEstimated,preferredAddress:(stateProvince,cityVillage),attributes:(value))`);
  if (!person.birthdateEstimated || person.preferredAddress?.cityVillage !== "Lingwala" || person.preferredAddress?.stateProvince !== "Kinshasa" || person.attributes[0]?.value !== "0812345678")
    throw new Error(`the edit was not stored as made: ${JSON.stringify(person)}`);
});

await step("mark-a-patient-deceased", async () => {
  const [helene] = (await api("GET", "patient?q=Mbuyi&v=custom:(uuid)")).results;
  await page.goto(`${base}/openmrs/spa/patient/${helene.uuid}/chart`);
  await visible(page.getByText("Hélène Mbuyi"));
  await page.getByRole("button", { name: /Actions/ }).first().click();
  await page.getByRole("menuitem", { name: "Marquer comme décédé" }).click();
  // The causes are the answers of the content's cause-of-death question; "Autre" asks for text.
  await visible(page.getByText("Paludisme grave avec atteinte cérébrale"));
  await page.getByText("Autre", { exact: true }).click();
  await page.locator("input#freeTextCauseOfDeath").fill("Morsure de serpent");
  await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
  await visible(page.getByText("Le patient a été déclaré décédé"));
  await visible(page.getByText("Décédé", { exact: true }));
  const person = await api("GET", `person/${helene.uuid}?v=custom:(dead,deathDate,causeOfDeath,causeOfDeathNonCoded)`);
  if (!person.dead || !person.deathDate || person.causeOfDeath !== null || person.causeOfDeathNonCoded !== "Morsure de serpent")
    throw new Error(`the death was not stored as recorded: ${JSON.stringify(person)}`);
});

await step("keep-a-patient-list", async () => {
  await page.goto(`${base}/openmrs/spa/home/patient-lists`);
  await page.getByRole("button", { name: "Nouvelle liste" }).click();
  await page.getByLabel("Nom de la liste").fill("Femmes enceintes à revoir");
  await page.getByText("Choisir le type de cohorte").click();
  await page.getByRole("option", { name: "Ma liste" }).click();
  await page.getByLabel(/Décrivez l'objet/).fill("Consultations prénatales du mardi");
  await page.getByRole("button", { name: "Créer une liste" }).click();
  await visible(page.getByText("Liste créée avec succès"));
  await page.getByRole("tab", { name: "Mes listes" }).click();
  await page.getByRole("link", { name: "Femmes enceintes à revoir" }).click();
  await visible(page.getByText("Consultations prénatales du mardi"));
  // A patient found by name and added to the list.
  await page.getByRole("button", { name: "Ajouter le patient à la liste" }).first().click();
  await page.getByRole("searchbox").last().fill("Grâce Kapinga");
  await page.keyboard.press("Enter");
  await page.locator('[data-openmrs-role="Search Results"] button', { hasText: "Grâce Kapinga" }).first().click();
  await visible(page.getByText("Patient ajouté à la liste"));
  await visible(page.getByRole("row", { name: /Grâce Kapinga/ }));
  const [list] = (await api("GET", "cohortm/cohort?q=enceintes&v=custom:(uuid,size)")).results;
  if (list?.size !== 1) throw new Error(`the list does not hold her: ${JSON.stringify(list)}`);
});

await step("take-her-off-the-list", async () => {
  await page.getByRole("row", { name: /Grâce Kapinga/ }).getByRole("button").last().click();
  const dialog = page.getByRole("dialog");
  await visible(dialog.getByText("Retirer le patient de la liste"));
  await dialog.getByRole("button", { name: "Retirer de la liste" }).click();
  await page.getByRole("row", { name: /Grâce Kapinga/ }).waitFor({ state: "detached", timeout: 30000 });
  // Her membership ended, kept: the list is empty.
  const [list] = (await api("GET", "cohortm/cohort?q=enceintes&v=custom:(uuid,size)")).results;
  const members = await api("GET", `cohortm/cohortmember?cohort=${list.uuid}&includeAll=true&v=custom:(endDate)`);
  if (list.size !== 0 || members.results.length !== 1 || !members.results[0].endDate)
    throw new Error(`her membership was not ended: ${JSON.stringify({ list, members })}`);
});

await step("an-administrator-names-a-triage-room", async () => {
  // The service-queues admin page: a room for the triage queue, where the nurse calls from.
  await page.goto(`${base}/openmrs/spa/home/service-queues/admin`);
  await page.getByRole("button", { name: "Ajouter une salle" }).first().click();
  await page.locator("#queueRoomName").fill("Salle de triage 1");
  await page.locator("select#queueRoomLocation").selectOption({ label: "Bondeko - Triage" });
  await page.locator("select#queueRoomService option", { hasText: "Bondeko - File de triage" }).waitFor({ state: "attached", timeout: 30000 });
  await page.locator("select#queueRoomService").selectOption({ label: "Bondeko - File de triage" });
  await page.locator("#description").fill("Près de l'entrée");
  await page.locator('button[type="submit"]').click();
  await visible(page.getByText("Salle créée"));
  await visible(page.getByRole("cell", { name: "Salle de triage 1" }));
  const rooms = await api("GET", "queue-room?v=custom:(name,queue:(display))");
  if (rooms.results[0]?.queue?.display !== "Bondeko - File de triage") throw new Error(`the room was not kept: ${JSON.stringify(rooms)}`);
});

await step("administer-accounts", async () => {
  // From the application menu, as an administrator finds it.
  await page.getByRole("button", { name: "Applications" }).click();
  await page.getByRole("link", { name: "Comptes et rôles" }).click();
  await page.waitForURL(/\/spa\/accounts/, { timeout: 30000 });
  await visible(page.getByRole("cell", { name: "admin", exact: true }));

  // A receptionist's account, with a role of the content.
  await page.getByRole("button", { name: "Créer un compte" }).click();
  let dialog = page.getByRole("dialog");
  await dialog.getByLabel("Prénom").fill("Bénédicte");
  await dialog.getByLabel("Nom de famille").fill("Tshala");
  await dialog.getByLabel("Nom d'utilisateur").fill("accueil.benedicte");
  await dialog.getByLabel("Mot de passe", { exact: true }).fill(clerkPassword);
  await dialog.getByLabel("Confirmer le mot de passe").fill(clerkPassword);
  await dialog.getByText("Application: Registers Patients", { exact: true }).click();
  await dialog.getByRole("button", { name: "Créer", exact: true }).click();
  await visible(page.getByRole("cell", { name: "accueil.benedicte", exact: true }));
  const [clerk] = (await api("GET", "user?username=accueil.benedicte&v=custom:(uuid,person:(uuid),roles:(display))")).results;
  if (clerk?.roles?.[0]?.display !== "Application: Registers Patients") throw new Error(`the account was not stored with its role: ${JSON.stringify(clerk)}`);

  // Her provider, with the facility's identifier.
  await page.getByRole("tab", { name: "Prestataires" }).click();
  await page.getByRole("button", { name: "Créer un prestataire" }).click();
  dialog = page.getByRole("dialog");
  await dialog.getByLabel("Compte").selectOption({ label: "Bénédicte Tshala (accueil.benedicte)" });
  await dialog.getByLabel("Identifiant").fill("ACC-12");
  await dialog.getByRole("button", { name: "Créer", exact: true }).click();
  await visible(page.getByRole("cell", { name: "ACC-12", exact: true }));

  // A role of this server, inheriting one of the content's.
  await page.getByRole("tab", { name: "Rôles" }).click();
  await page.getByRole("button", { name: "Créer un rôle" }).click();
  dialog = page.getByRole("dialog");
  await dialog.getByLabel("Nom du rôle").fill("Accueil de nuit");
  await dialog.getByLabel("Description").fill("Accueil des urgences la nuit");
  await dialog.getByRole("group", { name: "Rôles hérités" }).getByText("Application: Registers Patients", { exact: true }).click();
  await dialog.getByRole("button", { name: "Créer", exact: true }).click();
  await visible(page.getByRole("cell", { name: "Accueil de nuit", exact: true }));
  const role = await api("GET", "role/Accueil%20de%20nuit?v=custom:(definedBy,inheritedRoles:(display))");
  if (role.definedBy !== "api" || role.inheritedRoles[0]?.display !== "Application: Registers Patients") throw new Error(`the role was not stored as made: ${JSON.stringify(role)}`);

  // She logs in, records as her provider, may search patients but not change settings.
  const auth = "Basic " + Buffer.from(`accueil.benedicte:${clerkPassword}`).toString("base64");
  const as = (method, path, body) =>
    fetch(`${base}/openmrs/ws/rest/v1/${path}`, { method, headers: { Authorization: auth, "Content-Type": "application/json" }, body: body && JSON.stringify(body) });
  const session = await (await as("GET", "session?v=custom:(authenticated,currentProvider)")).json();
  const [provider] = (await api("GET", "provider?q=ACC-12&v=custom:(uuid,person:(uuid))")).results;
  if (!session.authenticated || session.currentProvider?.uuid !== provider?.uuid || provider?.person?.uuid !== clerk.person.uuid)
    throw new Error(`the new account does not log in as its provider: ${JSON.stringify({ session, provider })}`);
  if ((await as("GET", "patient?q=Mbuyi")).status !== 200) throw new Error("the new account cannot search patients");
  const refused = await as("POST", "systemsetting", { property: "accueil.test", value: "x" });
  if (refused.status !== 403) throw new Error(`the new account changed a setting: ${refused.status}`);

  // She leaves: her account is retired from the page, and she can no longer log in.
  await page.getByRole("dialog").waitFor({ state: "hidden", timeout: 30000 });
  await page.getByRole("tab", { name: "Utilisateurs" }).click();
  const herRow = page.getByRole("row").filter({ has: page.getByRole("cell", { name: "accueil.benedicte", exact: true }) });
  await herRow.getByRole("button", { name: "Retirer" }).click();
  dialog = page.getByRole("dialog");
  await dialog.getByLabel("Motif").fill("fin de contrat");
  await dialog.getByRole("button", { name: "Retirer", exact: true }).click();
  await visible(herRow.getByText("Retiré", { exact: true }));
  const after = await (await as("GET", "session?v=custom:(authenticated)")).json();
  if (after.authenticated !== false) throw new Error(`a retired account still logs in: ${JSON.stringify(after)}`);
  await page.getByRole("dialog").waitFor({ state: "hidden", timeout: 30000 });
});

await step("back-to-the-chart", async () => {
  await page.goto(chartUrl);
  await visible(page.getByText("Résumé patient"));
  await visible(page.getByText("Grâce Kapinga"));
});

french = false;
await step("switch-to-english", async () => {
  await page.getByRole("button", { name: "Mon compte" }).click();
  await visible(page.getByRole("button", { name: "Se déconnecter" }));
  // The first "Modifier" belongs to the language line.
  await page.getByRole("button", { name: "Modifier" }).first().click();
  const dialog = page.getByRole("dialog");
  await dialog.getByText("English", { exact: true }).click();
  await dialog.getByRole("button", { name: "Modifier" }).click();
  await visible(page.getByText("Patient summary"));
  await visible(page.getByText("Grâce Kapinga"));
  await visible(page.getByText("Female"));
});

await step("log-out", async () => {
  await page.getByRole("button", { name: "My account" }).click();
  // Activated from the keyboard, as a keyboard user does: the account panel's last button
  // can sit below the fold of the chart, where a pointer click lands on the vitals header
  // (seen once in a CI run, the panel opened while the chart was still laying out).
  const logout = page.getByRole("button", { name: /Log ?out/i }).first();
  await visible(logout);
  await logout.focus();
  await page.keyboard.press("Enter");
  await page.waitForURL(/\/login/, { timeout: 30000 });
  await visible(page.getByText(/Username/));
});

await browser.close();
for (const note of raceNotes) console.log(`  note: defined in the module's schema, reported before it loaded: ${note}`);
console.log(`e2e: ${passed} passed, 0 failed`);
