// The receptionist's flow in the real O3 front end, in Debian's Chromium (run by run.sh).
// Each step saves a screenshot in artifacts/; the run fails on the first broken step and
// when the back end answered an error the browser logged.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const base = process.env.E2E_BASE;
const password = process.env.E2E_PASSWORD;
const artifacts = join(dirname(fileURLToPath(import.meta.url)), "artifacts");
mkdirSync(artifacts, { recursive: true });
const basic = "Basic " + Buffer.from(`admin:${password}`).toString("base64");

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
  }
});
page.on("console", (m) => {
  if (m.type() === "error") console.log(`  console error: ${m.text().slice(0, 300)}`);
});

let n = 0;
let passed = 0;
async function step(name, fn) {
  n += 1;
  const shot = join(artifacts, `${String(n).padStart(2, "0")}-${name}.png`);
  try {
    await fn();
    await page.screenshot({ path: shot });
    passed += 1;
    console.log(`ok ${n}: ${name}`);
  } catch (e) {
    await page.screenshot({ path: shot }).catch(() => {});
    console.log(`failed ${n}: ${name}: ${e.message}`);
    console.log((await page.innerText("body").catch(() => "")).slice(0, 1500));
    console.log(`e2e: ${passed} passed, 1 failed`);
    await browser.close();
    process.exit(1);
  }
}
const visible = (locator) => locator.first().waitFor({ state: "visible", timeout: 30000 });

await step("login-page-in-french", async () => {
  await page.goto(`${base}/openmrs/spa/login`);
  await visible(page.getByText("Nom d'utilisateur"));
  if ((await page.evaluate(() => document.documentElement.lang)) !== "fr") throw new Error("the page is not in French");
});

await step("log-in", async () => {
  await page.getByLabel("Nom d'utilisateur").fill("admin");
  await page.getByRole("button", { name: /Continuer/ }).click();
  await page.locator("input#password").fill(password);
  await page.getByRole("button", { name: "Connexion" }).click();
  await page.waitForURL(/\/login\/location/, { timeout: 30000 });
});

await step("choose-location", async () => {
  await visible(page.getByText("Bondeko - Accueil"));
  await page.getByText("Bondeko - Accueil").click();
  await page.getByRole("button", { name: "Valider" }).click();
  await page.waitForURL(/\/home/, { timeout: 30000 });
});

await step("search-without-accents", async () => {
  await page.getByRole("button", { name: /Rechercher un patient/i }).click();
  await page.getByRole("searchbox").first().fill("helene");
  await visible(page.getByText("Hélène Mbuyi"));
});

let chartUrl;
await step("register-a-patient", async () => {
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
  await page.getByRole("button", { name: /Enregistrer le patient/ }).click();
  await page.waitForURL(/\/patient\/[0-9a-f-]{36}\/chart/, { timeout: 30000 });
  chartUrl = page.url();
});

await step("chart-banner", async () => {
  await visible(page.getByText("Grâce Kapinga"));
  const uuid = chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const patient = await api("GET", `patient/${uuid}`);
  const generated = patient.identifiers[0].display.split(" = ")[1];
  await visible(page.getByText(generated));
});

await step("switch-to-english", async () => {
  await page.getByRole("button", { name: "Mon compte" }).click();
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
  await page.getByRole("button", { name: /Log ?out/i }).first().click();
  await page.waitForURL(/\/login/, { timeout: 30000 });
  await visible(page.getByText(/Username/));
});

await browser.close();
if (backendErrors.length > 0) {
  console.log("the back end answered errors the browser logged:\n  " + backendErrors.join("\n  "));
  console.log(`e2e: ${passed} passed, 1 failed`);
  process.exit(1);
}
console.log(`e2e: ${passed} passed, 0 failed`);
