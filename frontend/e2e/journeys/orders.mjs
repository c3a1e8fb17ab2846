// Orders and the care record: a prescription from the order basket (its line showing the
// drug in stock), changed (a revision of the first order), dispensed in the pharmacy app
// from the pharmacy's stock (the batch the stock journey brought there, its tablets drawn),
// stopped, renewed from the past treatments, then paused and closed by the pharmacy with
// reasons from the content; a laboratory test ordered, picked up, resulted and completed in
// the laboratory app; the result in the chart, flagged.
// Needs: the browser logged in at reception on her chart, her visit open; the pharmacy
// stocked with paracetamol (the stock journey).
import { api, base, basic, logIn, openTheChart, page, patientUuid, RECEPTION, registerThePatient, startTheVisit, step, visible, workAt } from "../lib.mjs";
import { PARACETAMOL, PHARMACY, stockThePharmacy } from "./stock.mjs";

export async function seed() {
  await registerThePatient();
  await startTheVisit();
  await logIn();
  await stockThePharmacy();
  await openTheChart();
}

async function pharmacyTablets() {
  const rows = (await api("GET", `stockmanagement/stockiteminventory?drugUuid=${PARACETAMOL}&locationUuid=${PHARMACY}&groupBy=LocationStockItem`)).results;
  return rows.reduce((sum, r) => sum + r.quantity * r.quantityFactor, 0);
}

async function signTheBasket({ open }) {
  // After a new prescription the basket is opened from the side menu; after a
  // discontinuation it opens by itself (waited for: opening it again would close it).
  const sign = page.getByRole("button", { name: "Signer et fermer" });
  if (open) await page.getByRole("button", { name: "Ordonnance", exact: true }).click();
  await visible(sign);
  await sign.click();
  await sign.waitFor({ state: "hidden", timeout: 30000 });
}

export async function run() {
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
    // The basket's line says the pharmacy's stock holds the drug (the order basket's
    // `InventoryItem` search, answered from the stock journey's movements).
    await page.getByRole("button", { name: "Ordonnance", exact: true }).click();
    await visible(page.getByText("En stock", { exact: true }));
    await signTheBasket({ open: false });
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
    // The pharmacist works at the pharmacy, whose stock the dispensing form offers.
    const before = await pharmacyTablets();
    await workAt(PHARMACY);
    await page.goto(`${base}/openmrs/spa/dispensing`);
    await page.getByRole("tab", { name: "Ordonnances actives" }).click();
    const row = page.getByRole("tabpanel").filter({ visible: true }).locator("tbody tr").filter({ hasText: "Grâce Kapinga" }).first();
    await row.getByRole("button").first().click();
    await visible(page.getByText("Paracétamol 500 mg comprimé").first());
    await page.getByRole("button", { name: "Délivrer", exact: true }).first().click();
    // The form holds the prescription's quantity, dose, route and frequency.
    if ((await page.locator("input#quantity").inputValue()) !== "15") throw new Error("the dispense form does not hold the prescribed quantity");
    // The batch to draw from: the pharmacy's, first to expire first.
    await page.locator("#stockDispense").click();
    await page.getByRole("option", { name: /^Lot : PCM-2026-01 - Quantité : \d+ \(Comprimé\)/ }).click();
    await page.getByRole("button", { name: "Délivrer une prescription" }).click();
    await visible(page.getByText("Prescription terminée"));
    await visible(page.getByText("Stock distribué et niveau de lot mis à jour."));
    const after = await pharmacyTablets();
    if (after !== before - 15) throw new Error(`the dispense did not draw 15 tablets from the pharmacy: ${before} before, ${after} after`);
    await workAt(RECEPTION);
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
    // The sign button is renamed while the orders are being sent, and until the chart has
    // read the new order back, the first table on the page is the past treatments' (which
    // shows the stopped "2 comprimé" too): wait for the active treatments to replace their
    // empty state, or the API read below would race the signing.
    await page.getByText("Aucun(e) traitement en cours à afficher pour ce patient.").waitFor({ state: "hidden", timeout: 30000 });
    // And, should a loading skeleton have taken the empty state's place, until the active
    // treatments' table stands above the past ones'.
    await page.waitForFunction(() => document.querySelectorAll("main table").length >= 2, null, { timeout: 30000, polling: 200 });
    await visible(page.locator("table").first().getByText(/2 comprimé/));
    const active = (await api("GET", `order?patient=${patientUuid()}&status=active&v=custom:(action,previousOrder:(uuid),fulfillerStatus)`)).results;
    if (active.length !== 1 || active[0].action !== "RENEW" || active[0].previousOrder?.uuid !== stopped?.uuid || active[0].fulfillerStatus !== null) {
      // Every order's dates and the time of asking, to tell a late read from a wrong one.
      const all = (await api("GET", `order?patient=${patientUuid()}&status=any&v=custom:(uuid,action,dateActivated,dateStopped,autoExpireDate)`)).results;
      throw new Error(`the prescription was not renewed: ${JSON.stringify({ stopped, active, all, askedAt: new Date().toISOString() })}`);
    }
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
    // Then closed: the pharmacy will not dispense it. (Once the pause form has gone: while it
    // closes, a disabled danger button of its own may still match.)
    await page.locator("input#reasonForPause").waitFor({ state: "detached", timeout: 30000 });
    await page.locator("button:not([disabled])", { hasText: "Terminer" }).filter({ visible: true }).first().click();
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
}
