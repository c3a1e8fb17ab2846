// Reports, in the reports app (@openmrs/esm-reports-app, at /openmrs/spa/reports): the
// administrator runs the DRC HIV stages 3 and 4 report from the first of January 2026 to
// today as CSV, sees the run listed as completed, downloads it (the CSV's header names the
// report's columns, "Mâles" among them) and deletes the run; then plans the report for the
// first day of every month, and takes the plan off again.
// Needs: the browser logged in (as the administrator, in French), the report of the content
// (openmrs_config/reports/vih-stades-3-et-4.json) with its CSV design, and its two date
// parameters labelled "Date de début du rapport" and "Date de fin du rapport" (the national
// module's labels). Leaves nothing behind.
import { readFileSync } from "node:fs";
import { api, base, basic, followAppMenuLink, logIn, page, step, visible } from "../lib.mjs";

const REPORT = "Rapport sur les stades 3 et 4 du VIH en RDC";
const REPORT_UUID = "27b977d2-02bf-4ef9-b512-9b9c495962b8";
const CSV_DESIGN = "beac741c-813c-43a0-80e1-27c9de5bcf01";
// The labels the server gives the parameters startDate and endDate (parameters[].label):
// the app shows them as they come, in the form and in the list's "Paramètres" column.
const START_LABEL = "Date de début du rapport";
const END_LABEL = "Date de fin du rapport";

// The reports app's own English, which the French screens must not show (its French comes
// from the module's fr.json and config.json's overrides).
const ENGLISH = [
  "Run reports", "Run report", "Report schedule", "Reports Webview", "Report name", "Requested by",
  "Requested on", "Output format", "Parameters", "Completed", "Queued", "Running", "Failed",
  "Download", "Preserve", "Delete", "Scheduled reports", "Not scheduled", "Next run", "Every month",
  "First day", "Edit scheduled report", "Delete Schedule",
];
async function noEnglishHere() {
  const text = await page.innerText("body");
  const found = ENGLISH.filter((e) => new RegExp(`(^|[^\\p{L}])${e}($|[^\\p{L}])`, "u").test(text));
  if (found.length > 0) throw new Error(`English on the reports app's French screen: ${found.join(", ")}`);
}

const pad = (n) => String(n).padStart(2, "0");
const today = new Date();
const todayIso = `${today.getFullYear()}-${pad(today.getMonth() + 1)}-${pad(today.getDate())}`;

/** Types a date into the run form's date field labelled so (the framework's date picker: one
 * field per part, jj/mm/aaaa in French), year first so that the day is never beyond the
 * month the field holds. */
async function typeDate(label, iso) {
  const [year, month, day] = iso.split("-");
  const picker = page.locator("#reportParametersDiv .cds--date-picker-container").filter({ hasText: label });
  await visible(picker);
  for (const [part, digits] of [["year", year], ["month", month], ["day", day]]) {
    await picker.locator(`[data-type="${part}"]`).click();
    await page.keyboard.type(digits);
  }
}

// The POST the run form and the schedule form make, with the server's answer.
const reportRequestPost = () =>
  page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname.endsWith("/ws/rest/v1/reportingrest/reportRequest"), {
    timeout: 30000,
  });

// The uuid of the run, from the server's answer to the run form.
let runUuid;

export async function seed() {
  await logIn();
}

export async function run() {
  await step("run-a-report", async () => {
    // From the app menu, where the distribution's module puts the reports app.
    await page.goto(`${base}/openmrs/spa/home`);
    await followAppMenuLink("Rapports");
    await page.waitForURL(/\/spa\/reports/, { timeout: 30000 });
    await visible(page.getByRole("heading", { name: "Rapports", exact: true }));
    await visible(page.getByRole("columnheader", { name: "Nom du rapport" }));
    await page.getByRole("button", { name: "Exécuter les rapports" }).click();
    await visible(page.getByText("Exécuter le rapport", { exact: true }));

    // The report, by its name; its parameters appear once it is chosen.
    const report = page.locator("select#select-report");
    await report.locator("option", { hasText: REPORT }).waitFor({ state: "attached", timeout: 30000 });
    await report.selectOption({ label: REPORT });
    await typeDate(START_LABEL, "2026-01-01");
    await typeDate(END_LABEL, todayIso);
    // The report's designs are the output formats.
    const format = page.locator("select#output-format-select");
    await format.locator("option", { hasText: "CSV" }).waitFor({ state: "attached", timeout: 30000 });
    await format.selectOption({ label: "CSV" });

    const run = page.getByRole("button", { name: "Exécuter", exact: true });
    await run.waitFor({ state: "visible", timeout: 30000 });
    if (await run.isDisabled()) throw new Error("the form is complete, but its button stays disabled");
    const posted = reportRequestPost();
    await run.click();
    const answer = await posted;
    const sent = answer.request().postDataJSON();
    const { startDate, endDate } = sent.reportDefinition?.parameterMappings ?? {};
    if (sent.reportDefinition?.parameterizable?.uuid !== REPORT_UUID || sent.renderingMode?.argument !== CSV_DESIGN || !startDate || !endDate)
      throw new Error(`the run form did not send the report, its design and both dates: ${JSON.stringify(sent)}`);
    runUuid = (await answer.json()).uuid;
    if (!runUuid) throw new Error("the server's answer to the run has no uuid");
    await visible(page.getByText("Le rapport a été exécuté avec succès"));

    // The list reloads when the form closes; a run still queued or running then shows so
    // until the list is loaded again, as a user reloading the page sees it.
    const row = page.getByRole("row").filter({ has: page.locator(`[id="checkbox-${runUuid}"]`) });
    for (let tries = 0; !(await row.first().isVisible()); tries += 1) {
      if (tries === 10) throw new Error("the run is not listed as completed");
      await page.waitForTimeout(2000);
      await page.reload();
      await visible(page.getByRole("columnheader", { name: "Nom du rapport" }));
    }
    await visible(row.getByText(REPORT));
    await visible(row.getByText("Terminé", { exact: true }));
    await visible(row.getByText("CSV", { exact: true }));
    await visible(row.getByText(`${START_LABEL}: 2026-01-01, ${END_LABEL}: ${todayIso}`));
    const session = await api("GET", "session?v=custom:(user:(person:(display)))");
    await visible(row.getByText(session.user.person.display));
    const stored = await api("GET", `reportingrest/reportRequest/${runUuid}`);
    if (stored.status !== "COMPLETED" || stored.renderingMode?.argument !== CSV_DESIGN) throw new Error(`the run was not kept as completed: ${JSON.stringify(stored)}`);
    await noEnglishHere();
  });

  await step("download-the-report", async () => {
    const row = page.getByRole("row").filter({ has: page.locator(`[id="checkbox-${runUuid}"]`) });
    const download = page.waitForEvent("download", { timeout: 30000 });
    await row.getByRole("button", { name: "Télécharger", exact: true }).click();
    const file = await download;
    if (!file.suggestedFilename().endsWith(".csv")) throw new Error(`the download is not a CSV file: ${file.suggestedFilename()}`);
    const csv = readFileSync(await file.path(), "utf8");
    const header = csv.split(/\r?\n/)[0];
    if (!header.includes("Mâles")) throw new Error(`the CSV's header does not name the column Mâles: ${header.slice(0, 300)}`);
    await visible(page.getByText("Rapport téléchargé avec succès"));
  });

  await step("download-it-as-a-workbook", async () => {
    // The same report again, in its Excel design: the file is an Office Open XML workbook.
    await page.getByRole("button", { name: "Exécuter les rapports" }).click();
    const report = page.locator("select#select-report");
    await report.locator("option", { hasText: REPORT }).waitFor({ state: "attached", timeout: 30000 });
    await report.selectOption({ label: REPORT });
    await typeDate(START_LABEL, "2026-01-01");
    await typeDate(END_LABEL, todayIso);
    const format = page.locator("select#output-format-select");
    await format.locator("option", { hasText: "Excel" }).waitFor({ state: "attached", timeout: 30000 });
    await format.selectOption({ label: "Excel" });
    const posted = reportRequestPost();
    await page.getByRole("button", { name: "Exécuter", exact: true }).click();
    const workbookRun = (await (await posted).json()).uuid;
    const row = page.getByRole("row").filter({ has: page.locator(`[id="checkbox-${workbookRun}"]`) });
    for (let tries = 0; !(await row.getByText("Terminé", { exact: true }).isVisible()); tries += 1) {
      if (tries === 10) throw new Error("the workbook run is not listed as completed");
      await page.waitForTimeout(2000);
      await page.reload();
      await visible(page.getByRole("columnheader", { name: "Nom du rapport" }));
    }
    const download = page.waitForEvent("download", { timeout: 30000 });
    await row.getByRole("button", { name: "Télécharger", exact: true }).click();
    const file = await download;
    if (!file.suggestedFilename().endsWith(".xlsx")) throw new Error(`the download is not a workbook: ${file.suggestedFilename()}`);
    const bytes = readFileSync(await file.path());
    // A zip whose parts name the worksheet, with the report's columns in it.
    if (bytes.subarray(0, 2).toString("latin1") !== "PK" || !bytes.includes(Buffer.from("xl/worksheets/sheet1.xml")))
      throw new Error("the workbook is not an Office Open XML file");
    const deleted = await fetch(`${base}/openmrs/ws/rest/v1/reportingrest/reportRequest/${workbookRun}`, { method: "DELETE", headers: { Authorization: basic } });
    if (deleted.status !== 204) throw new Error(`the workbook run was not deleted: ${deleted.status}`);
    await page.reload();
    await visible(page.getByRole("columnheader", { name: "Nom du rapport" }));
  });

  await step("delete-the-run", async () => {
    const row = page.getByRole("row").filter({ has: page.locator(`[id="checkbox-${runUuid}"]`) });
    await row.getByRole("button", { name: "Supprimer", exact: true }).click();
    const dialog = page.getByRole("dialog");
    await visible(dialog.getByText("Êtes-vous sûr de vouloir supprimer ce rapport ?"));
    // (A danger button: its name is "danger Oui", the first word for screen readers only.)
    await dialog.getByRole("button", { name: /Oui$/ }).click();
    await visible(page.getByText("Rapport supprimé avec succès"));
    await row.waitFor({ state: "detached", timeout: 30000 });
    const gone = await fetch(`${base}/openmrs/ws/rest/v1/reportingrest/reportRequest/${runUuid}`, { headers: { Authorization: basic, Accept: "application/json" } });
    if (gone.status !== 404) throw new Error(`the deleted run is still there: ${gone.status}`);
  });

  await step("plan-the-report-monthly", async () => {
    await page.getByRole("button", { name: "Planification des rapports" }).click();
    await page.waitForURL(/\/spa\/reports\/scheduled-overview/, { timeout: 30000 });
    await visible(page.getByRole("heading", { name: "Rapports planifiés" }));
    const row = page.getByRole("row").filter({ has: page.getByRole("cell", { name: REPORT, exact: true }) });
    await visible(row.getByText("Non planifié", { exact: true }));
    // (The form asks the server for the report's scheduled request even when there is none:
    // GET reportingrest/reportRequest/undefined.)
    await row.getByRole("button", { name: "Modifier", exact: true }).click();
    await visible(page.getByText("Modifier la planification du rapport", { exact: true }));
    await page.locator("select#scheduleType").selectOption({ label: "Chaque mois" });
    await page.locator("select#dayOfMonth").selectOption({ label: "Premier jour du mois" });
    const time = page.locator("input#cronTimePicker");
    await time.fill("08:00");
    // The time is read when the field is left.
    await time.blur();
    // The plan's parameters: the schedule form's date fields (Carbon's, not the framework's)
    // read dates as mm/dd/yyyy whatever the language, and show nothing once read: the app
    // keeps the date, which the request carries.
    for (const [id, iso] of [["startDate", "2026-01-01"], ["endDate", todayIso]]) {
      const [year, month, day] = iso.split("-");
      const field = page.locator(`input#${id}`);
      await field.click();
      await field.fill(`${month}/${day}/${year}`);
      await page.keyboard.press("Enter");
      await page.keyboard.press("Escape");
    }
    const format = page.locator("select#outputFormat");
    await format.locator("option", { hasText: "CSV" }).waitFor({ state: "attached", timeout: 30000 });
    await format.selectOption({ label: "CSV" });
    const posted = reportRequestPost();
    await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
    const sent = (await posted).request().postDataJSON();
    const dates = sent.reportDefinition?.parameterMappings ?? {};
    if (sent.schedule !== "0 0 8 1 * ?" || sent.reportDefinition?.parameterizable?.uuid !== REPORT_UUID || sent.renderingMode?.argument !== CSV_DESIGN || !dates.startDate || !dates.endDate)
      throw new Error(`the schedule form did not send a monthly plan of the report: ${JSON.stringify(sent)}`);
    await visible(page.getByText("Le rapport a été planifié"));
    await visible(row.getByText("Planifié", { exact: true }));
    const plans = await api("GET", "reportingrest/reportDefinitionsWithScheduledRequests?sortBy=name");
    const plan = plans.results.find((p) => p.reportDefinition?.uuid === REPORT_UUID)?.scheduledRequests?.[0];
    if (plan?.schedule !== "0 0 8 1 * ?" || plan?.status !== "SCHEDULED") throw new Error(`the plan was not kept: ${JSON.stringify(plan)}`);
    await noEnglishHere();
  });

  await step("take-the-plan-off", async () => {
    const row = page.getByRole("row").filter({ has: page.getByRole("cell", { name: REPORT, exact: true }) });
    await row.getByRole("button", { name: "Supprimer la planification" }).click();
    const dialog = page.getByRole("dialog");
    await visible(dialog.getByText("Êtes-vous sûr de vouloir supprimer cette planification ?"));
    await dialog.getByRole("button", { name: /Oui$/ }).click();
    await visible(page.getByText("La planification du rapport a été supprimée"));
    await visible(row.getByText("Non planifié", { exact: true }));
    const plans = await api("GET", "reportingrest/reportDefinitionsWithScheduledRequests?sortBy=name");
    const plan = plans.results.find((p) => p.reportDefinition?.uuid === REPORT_UUID);
    if (plan?.scheduledRequests?.length !== 0) throw new Error(`the plan is still there: ${JSON.stringify(plan)}`);
  });
}
