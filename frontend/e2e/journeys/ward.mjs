// The ward: an administrator puts beds in the observation ward; the clinician asks for her
// admission with the content's form; the observation ward's nurse sees the request and admits
// her to a bed, the ward asks for her transfer to the maternity, which accepts her (without a
// bed: it has none), then discharges her, and the walk goes back to reception.
// Needs: the browser logged in at reception, her visit open (at the facility whose wards the
// transfer offers).
import { RECEPTION, api, base, logIn, openTheChart, page, patientUuid, registerThePatient, startTheVisit, state, step, visible } from "../lib.mjs";

export async function seed() {
  await registerThePatient();
  await startTheVisit();
  await logIn();
  await openTheChart();
}

const OBSERVATION_WARD = "c0a020aa-4723-4dc4-b19f-2cd20cacd064";
const MATERNITY = "6a60d256-2ed9-43cc-a143-f9a4907fa60b";
// The ward page shows the ward the nurse works in: her session's location, as the location
// picker sets it (the app's extension does not see a ward named in its URL).
async function workAt(location) {
  await page.evaluate(async (uuid) => {
    const r = await fetch("/openmrs/ws/rest/v1/session", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ sessionLocation: uuid }) });
    if (!r.ok) throw new Error(`session location: ${r.status}`);
  }, location);
}

export async function run() {
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
    await page.goto(state.chartUrl);
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
    await page.goto(state.chartUrl);
    await visible(page.getByText("Grâce Kapinga"));
    await visible(page.locator("header").getByText("Bondeko - Accueil"));
  });
}
