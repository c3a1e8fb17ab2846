// Reception: the login page in French, the login and its location, a patient found by her
// name typed without its accents, a new patient registered (an estimated age, the province
// the address template requires) and her chart with the summary's widgets, her visit started
// with her check-in (paying, in cash: the answers kept with the visit and her consultation
// billed) and her place in the triage queue, where the triage nurse calls and serves her.
// It opens the walk: it needs nothing before it. It leaves state.chartUrl and
// state.checkInReceipt for the journeys after it.
import { api, base, context, page, password, state, step, summaryWidgets, visible } from "../lib.mjs";

export async function run() {
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
    state.chartUrl = page.url();
    // The chart opens on the new patient, with the identifier the server generated.
    await visible(page.getByText("Grâce Kapinga"));
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
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
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const [visit] = (await api("GET", `visit?patient=${uuid}&v=full`)).results;
    const shown = visit.attributes.map((a) => a.display).sort().join(" | ");
    if (shown !== "Détails de paiement: Payant | Mode de paiement: fc99ef44-6260-44b3-90db-05e7d0a91a14 | Numéro dans la file d'attente: BON-001") throw new Error(`the check-in and the queue number were not kept with the visit: ${shown}`);
    const [bill] = (await api("GET", `billing/bill?patientUuid=${uuid}&v=full`)).results;
    if (bill?.status !== "PENDING" || bill.total !== 5000 || bill.visit?.uuid !== visit.uuid) throw new Error(`the check-in bill was not made: ${JSON.stringify(bill)}`);
    state.checkInReceipt = bill.receiptNumber;
    await visible(page.getByText("Bondeko - File de triage"));
    await visible(page.getByText("Priorité normale"));
  });

  await step("print-her-identifier-sticker", async () => {
    // The banner's actions: her sticker opens as a PDF in a new tab, for the desk's label
    // printer. The PDF is checked as the server sent it to that tab.
    await page.getByRole("button", { name: /Actions/ }).first().click();
    const asked = context.waitForEvent("request", { predicate: (r) => r.url().includes("/patientdocuments/patientIdSticker?"), timeout: 30000 });
    const tab = context.waitForEvent("page", { timeout: 30000 });
    await page.getByRole("menuitem", { name: "Imprimer l'étiquette d'identification" }).click();
    const url = (await asked).url();
    await (await tab).close();
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    if (!url.includes(`patientUuid=${uuid}`)) throw new Error(`the sticker asked for someone else: ${url}`);
    const res = await context.request.get(url);
    const pdf = (await res.body()).toString("latin1");
    const patient = await api("GET", `patient/${uuid}`);
    // The sticker prints her preferred identifier.
    const preferred = patient.identifiers.find((i) => i.preferred) ?? patient.identifiers[0];
    const identifier = preferred.display.split(" = ")[1];
    if (res.status() !== 200 || res.headers()["content-type"] !== "application/pdf" || !pdf.startsWith("%PDF-") || !pdf.includes("(Gr\xe2ce Kapinga) Tj") || !pdf.includes(`: ${identifier}) Tj`))
      throw new Error(`the sticker is not her label: ${res.status()} ${res.headers()["content-type"]} ${pdf.slice(0, 300)}`);
  });

  await step("the-home-page-lists-her-visit", async () => {
    // The active visits of the facility, on the home page's overview.
    await page.goto(`${base}/openmrs/spa/home`);
    await page.getByRole("link", { name: "Vue d'ensemble" }).click();
    await page.waitForURL(/\/home\/overview/, { timeout: 30000 });
    await visible(page.getByRole("heading", { name: "Visites en cours" }));
    const row = page.getByRole("row", { name: /Grâce Kapinga/ });
    await visible(row.getByText("Consultation externe"));
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
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const all = await api("GET", `queue-entry?patient=${uuid}&v=custom:(status:(uuid),endedAt,previousQueueEntry:(uuid))`);
    const open = all.results.filter((e) => e.endedAt === null);
    if (all.results.length !== 2 || open.length !== 1 || open[0].status.uuid !== "91ed8388-f8b6-54b5-9f7c-6360060038e3")
      throw new Error(`the patient is not in service: ${JSON.stringify(all.results)}`);
  });
}
