// The visit ended, and what it left in the chart: the test results (the temperature the
// clinical journey recorded, drawn from the vital-signs set), the visit history (its type, its
// forms, its encounters and the visit note's diagnosis), the consultation form edited (the new
// value current, the old one kept, voided, as its previous version), and an encounter deleted
// (voided on the server).
// Needs what the clinical journey saves through its forms (the consultation form's values,
// which the form reopens for editing, the vital signs, the visit note): it cannot run alone,
// so it has no seed().
import { api, page, state, step, visible } from "../lib.mjs";

export async function run() {
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
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
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
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const all = await api("GET", `encounter?patient=${uuid}&encounterType=023c2721-8ffa-4ce2-a1d4-7a2a3ec45f42&includeAll=true&v=custom:(uuid,voided)`);
    if (!all.results.some((e) => e.voided === true)) throw new Error(`the vital-signs encounter was not voided: ${JSON.stringify(all)}`);
  });
}
