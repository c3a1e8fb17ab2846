// Stock, in the stock management app (@openmrs/esm-stock-management-app, at
// /openmrs/spa/stock-management): the stock manager, whose user role scope covers the
// central store and the pharmacy, records a delivery of paracetamol from the provincial
// depot at the central store (batch, expiry, five boxes of 100 at a purchase price) and
// submits it for approval; then approves it, and the store holds 500 tablets of the batch.
// Before it, examination gloves and paracetamol's reorder level are imported from a CSV
// file on the items page.
// The pharmacy asks the store for two boxes (a requisition, approved); the store issues
// them against it, choosing the batch, and the pharmacy receives them; the store transfers
// a box to another health facility (a transfer out, approved). At the pharmacy, ten
// tablets lost are adjusted with a reason from the content, and a stock take counts 185 of
// the 190 recorded: the difference is posted. The pharmacy's stock status is run as a
// report and its CSV downloaded. The orders journey then dispenses from the pharmacy's
// stock.
// Needs: the browser logged in (as the administrator, in French). Made through the API
// first, as the stock manager would have made them on the items, sources and scopes pages:
// the administrator's user role scope, the depot as a stock source, and the stock item for
// paracetamol 500 mg with its units (tablet, box of 100). Leaves the administrator logged
// in again, on the patient's chart when the walk has one.
//
// The pinned app (3.2.1) writes some of its labels in English with no translation key (the
// "Start New" menu, the operation statuses, the filters' names, the form's step titles, the
// action named in a confirmation, a line's availability) and so does its copy of Carbon
// (pagination, table search): frontend/patch-modules.mjs makes them translation lookups,
// which config.json's overrides give in French, and the French check here covers them. The
// reports' names are translated where they are shown (the app still compares the English
// ones to choose each report's parameters).
import { api, base, logIn, openTheChart, page, state, step, visible } from "../lib.mjs";

const STORE = "984bac3b-db96-459e-b52b-76a59069e6c4";
export const PHARMACY = "f7cfa24b-e54f-42ef-83a3-1e256e74d5da";
export const PARACETAMOL = "73577264-62d4-42cf-bd81-c18cb147b3f7";
const TABLET = "1513AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
// Examination gloves, a non-drug item of the content (a concept).
const GLOVES = "a3e9c1d2-7b4f-4c8a-b6e5-1d2f3a4b5c62";
const MANAGER_PASSWORD = "Stock-2026-rapports";
const BOX = "162396AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
// The module's nine operation types, under their published uuids (1111…, 2222…, … 9999…).
const TYPES = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((d) => {
  const r = (n) => String(d).repeat(n);
  return `${r(8)}-${r(4)}-${r(4)}-${r(4)}-${r(12)}`;
});

// The app's English that its French must not show (translated by the module or by
// config.json's overrides).
const ENGLISH = [
  "Next", "Previous", "Submit For Review", "Filter by status", "Loading...", "Batch number", "Expiration date",
  "Purchase Price", "Quantity", "Operation Date", "Responsible Person", "Remarks", "Does the transaction require approval",
  "Start New", "Operation", "Number", "SUBMITTED", "DISPATCHED", "COMPLETED", "Details", "Submit/Complete", "Submit/Dispatch",
  "Out of Stock", "Available:", "Approve", "Stock Item Batch Number", "Would you really",
];
async function noEnglishHere() {
  const text = await page.innerText("body");
  const found = ENGLISH.filter((e) => new RegExp(`(^|[^\\p{L}])${e.replace(/[.?]/g, "\\$&")}($|[^\\p{L}])`, "u").test(text));
  if (found.length > 0) throw new Error(`English on the stock app's French screen: ${found.join(", ")}`);
}

export async function seed() {
  await logIn();
}

let item;
let operationNumber;

async function onHand(location) {
  const inventory = await api("GET", `stockmanagement/stockiteminventory?stockItemUuid=${item}&locationUuid=${location}&groupBy=LocationStockItem`);
  return inventory.results.reduce((sum, r) => sum + r.quantity * r.quantityFactor, 0);
}

/** What the stock manager sets up on the items, sources and scopes pages: the
 * administrator's user role scope over the store and the pharmacy, the depot as a stock
 * source, and the stock item for paracetamol 500 mg with its units (tablet, box of 100). */
async function setUpTheStock() {
  const session = await api("GET", "session");
  await api("POST", "stockmanagement/userrolescope", {
    userUuid: session.user.uuid, role: "System Developer", permanent: true, enabled: true,
    locations: [{ locationUuid: STORE }, { locationUuid: PHARMACY }],
    operationTypes: TYPES.map((t) => ({ operationTypeUuid: t })),
  });
  await api("POST", "stockmanagement/stocksource", { name: "CDR Kinshasa", acronym: "CDR" });
  // Another health facility, to which the store may transfer (the module's other parties).
  await api("POST", "stockmanagement/stocksource", { name: "Centre de santé Makala", acronym: "CS Makala" });
  item = (await api("POST", "stockmanagement/stockitem", { drugUuid: PARACETAMOL, hasExpiration: true, dispensingUnitUuid: TABLET })).uuid;
  await api("POST", "stockmanagement/stockitempackaginguom", { stockItemUuid: item, packagingUomUuid: TABLET, factor: 1 });
  await api("POST", "stockmanagement/stockitempackaginguom", { stockItemUuid: item, packagingUomUuid: BOX, factor: 100 });
}

/** The pharmacy as this journey leaves it, made through the API for a journey run alone
 * after it: 185 tablets of paracetamol of batch PCM-2026-01 (as opening stock). */
export async function stockThePharmacy() {
  await setUpTheStock();
  const units = await api("GET", `stockmanagement/stockitempackaginguom?stockItemUuid=${item}`);
  const tablet = units.results.find((u) => u.packagingUomUuid === TABLET).uuid;
  const expiration = new Date(Date.now() + 400 * 86400000).toISOString().slice(0, 10);
  const opening = await api("POST", "stockmanagement/stockoperation", {
    operationTypeUuid: TYPES[8], sourceUuid: PHARMACY, responsiblePersonOther: "Pharmacien",
    stockOperationItems: [{ stockItemUuid: item, batchNo: "PCM-2026-01", expiration, quantity: 185, stockItemPackagingUOMUuid: tablet }],
  });
  await api("POST", "stockmanagement/stockoperationaction", { name: "SUBMIT", uuid: opening.uuid });
  await api("POST", "stockmanagement/stockoperationaction", { name: "APPROVE", uuid: opening.uuid });
  if ((await onHand(PHARMACY)) !== 185) throw new Error("the pharmacy was not stocked");
}

export async function run() {
  await step("the-stock-managers-setup", async () => {
    await setUpTheStock();
    await page.goto(`${base}/openmrs/spa/stock-management/operations`);
    await visible(page.getByText("Opérations sur les stocks pour suivre les mouvements des stocks."));
    await noEnglishHere();
  });

  await step("items-are-imported-from-a-file", async () => {
    // Examination gloves, counted in pairs and delivered in boxes of 50, and paracetamol's
    // reorder level (two boxes), from a CSV file in the module's columns.
    const file = [
      "Drug ID,Concept Id,Expires,Expiry Notice,Category Concept Id,Dispensing Unit,Dispensing PUoM,Pack Size for Dispensing PUoM,Common Name,Abbreviation,Preferred Vendor,Reorder level,Reorder Level PUoM,Purchase Price,Purchase Price PUoM,Vendor code",
      `,${GLOVES},no,,DRC-EMR:9322,DRC-EMR:9331,CIEL:162396,50,Gants,GNT,CDR Kinshasa,,,4,CIEL:162396,CDR-GNT-50`,
      `${PARACETAMOL},,,,,,,,,,,2,CIEL:162396,,,`,
    ].join("\n");
    await page.goto(`${base}/openmrs/spa/stock-management/items`);
    await page.getByRole("button", { name: "Importer" }).click();
    await page.locator('input[type="file"]').setInputFiles({ name: "articles.csv", mimeType: "text/csv", buffer: Buffer.from(file) });
    await page.getByRole("button", { name: "Télécharger les Articles de Stock" }).click();
    await visible(page.getByText("Articles en stock téléchargés avec succès"));
    const [gloves] = (await api("GET", `stockmanagement/stockitem?conceptUuid=${GLOVES}&v=full`)).results;
    const [paracetamol] = (await api("GET", `stockmanagement/stockitem?drugUuid=${PARACETAMOL}&v=full`)).results;
    if (gloves?.commonName !== "Gants" || gloves.packagingUnits?.[0]?.factor !== 50 || gloves.hasExpiration !== false || paracetamol?.reorderLevel !== 2) {
      throw new Error(`the file was not imported as written: ${JSON.stringify({ gloves, paracetamol })}`);
    }
    await page.reload();
    await visible(page.getByText("Gants d'examen"));
    await noEnglishHere();
  });

  await step("a-delivery-is-received-at-the-central-store", async () => {
    await page.goto(`${base}/openmrs/spa/stock-management/operations`);
    await page.getByText("Nouvelle opération", { exact: true }).click();
    await page.getByRole("menuitem", { name: "Réception" }).click();
    await visible(page.getByText("Nouveau : Réception"));
    await page.locator("#sourceUuid").click();
    await page.getByRole("option", { name: "CDR Kinshasa" }).click();
    await page.locator("#destinationUuid").click();
    await page.getByRole("option", { name: "Bondeko - Magasin central" }).click();
    await page.locator("#responsiblePersonUuid").fill("Super");
    await page.getByRole("option", { name: "Super User" }).click();
    await page.locator("#remarks").fill("Livraison mensuelle du CDR");
    await noEnglishHere();
    await page.getByRole("button", { name: "Suivant" }).click();
    await page.locator("#search-stock-operation-item").fill("Parac");
    await page.getByText("Paracétamol 500 mg comprimé").first().click();
    await page.locator("#batchNumber").fill("PCM-2026-01");
    const expiry = new Date(Date.now() + 400 * 86400000);
    const pad = (n) => String(n).padStart(2, "0");
    await page.locator("#expiration-input").fill(`${pad(expiry.getDate())}/${pad(expiry.getMonth() + 1)}/${expiry.getFullYear()}`);
    await closeTheCalendar();
    await page.locator("#qty").fill("5");
    await page.locator("#stockItemPackagingUOMUuid").click();
    await page.getByRole("option", { name: "Boîte - 100" }).click();
    await page.locator("#purchaseprice").fill("12.5");
    await noEnglishHere();
    await page.getByRole("button", { name: "Enregistrer" }).last().click();
    await visible(page.getByText("PCM-2026-01"));
    await page.getByRole("button", { name: "Suivant" }).last().click();
    await page.getByText("Oui", { exact: true }).click();
    await noEnglishHere();
    await page.getByRole("button", { name: "Soumettre pour approbation" }).click();
    await visible(page.getByText("Opération de stock ajoutée avec succès"));
    // Saved, the operation is submitted once confirmed.
    await page.getByRole("dialog").getByRole("button", { name: "Soumettre" }).click();
    await visible(page.getByText(/L'opération a été enregistrée/));
    const operations = await api("GET", "stockmanagement/stockoperation?v=full");
    const receipt = operations.results.find((o) => o.operationType === "receipt");
    if (receipt?.status !== "SUBMITTED" || receipt.stockOperationItems[0]?.batchNo !== "PCM-2026-01" || receipt.stockOperationItems[0]?.quantity !== 5 || receipt.sourceName !== "CDR Kinshasa") {
      throw new Error(`the delivery was not kept as entered: ${JSON.stringify(receipt)}`);
    }
    if ((await onHand(STORE)) !== 0) throw new Error("a delivery awaiting approval is already in stock");
    operationNumber = receipt.operationNumber;
  });

  await step("the-stock-manager-approves-the-delivery", async () => {
    await act(operationNumber, "Approuver");
    const receipt = await operation(operationNumber);
    if (receipt?.status !== "COMPLETED") throw new Error(`the delivery is not completed: ${receipt?.status}`);
    const held = await onHand(STORE);
    if (held !== 500) throw new Error(`the store holds ${held} tablets, not 500`);
    await noEnglishHere();
  });

  let requisition;
  await step("the-pharmacy-asks-the-store-for-two-boxes", async () => {
    await startNew("Réquisition");
    await choose("sourceUuid", "Bondeko - Pharmacie");
    await choose("destinationUuid", "Bondeko - Magasin central");
    await page.locator("#responsiblePersonUuid").fill("Super");
    await page.getByRole("option", { name: "Super User" }).click();
    await page.getByRole("button", { name: "Suivant" }).click();
    await page.locator("#search-stock-operation-item").fill("Parac");
    await page.getByText("Paracétamol 500 mg comprimé").first().click();
    await page.locator("#qty").fill("2");
    await choose("stockItemPackagingUOMUuid", "Boîte - 100");
    await noEnglishHere();
    await page.getByRole("button", { name: "Enregistrer" }).last().click();
    requisition = await submitted();
    await act(requisition.operationNumber, "Approuver");
    if ((await operation(requisition.operationNumber)).status !== "COMPLETED") throw new Error("the requisition was not approved");
  });

  await step("the-store-issues-them-and-the-pharmacy-receives-them", async () => {
    // From the approved requisition: an issue from the store to the pharmacy, its lines
    // copied; the store chooses the batch of each.
    await expand(requisition.operationNumber);
    await page.getByRole("button", { name: "Émettre du Stock" }).click();
    await visible(page.getByText("Nouveau : Sortie de stock"));
    await page.getByRole("button", { name: "Suivant" }).click();
    // The line's first action: edit (the second takes it off).
    await page.getByRole("row", { name: /Paracétamol 500 mg comprimé/ }).getByRole("button").first().click();
    await page.locator("#stockBatchUuid").click();
    await page.getByRole("option", { name: /PCM-2026-01/ }).click();
    await noEnglishHere();
    await page.getByRole("button", { name: "Enregistrer" }).last().click();
    const issue = await submitted();
    if (issue.requisitionStockOperationUuid !== requisition.uuid) throw new Error(`the issue does not answer the requisition: ${JSON.stringify(issue)}`);
    // Approved, the issue is dispatched: the tablets have left the store but not yet
    // reached the pharmacy, which completes it when they arrive.
    await act(issue.operationNumber, "Expédier");
    if ((await operation(issue.operationNumber)).status !== "DISPATCHED") throw new Error("the issue was not dispatched");
    if ((await onHand(STORE)) !== 300 || (await onHand(PHARMACY)) !== 0) throw new Error("the issue's tablets are not in transit");
    await act(issue.operationNumber, "Terminer l'expédition");
    if ((await operation(issue.operationNumber)).status !== "COMPLETED") throw new Error("the issue was not completed");
    const at = [await onHand(STORE), await onHand(PHARMACY)];
    if (at[0] !== 300 || at[1] !== 200) throw new Error(`after the issue the store holds ${at[0]} and the pharmacy ${at[1]}, not 300 and 200`);
  });

  await step("the-store-transfers-a-box-to-another-facility", async () => {
    // A transfer out: one box of the batch leaves the central store for the Makala health
    // centre, approved by the manager; the store then holds 200 tablets.
    await startNew("Transfert sortant");
    await choose("sourceUuid", "Bondeko - Magasin central");
    await choose("destinationUuid", "Centre de santé Makala");
    await page.locator("#responsiblePersonUuid").fill("Super");
    await page.getByRole("option", { name: "Super User" }).click();
    await page.getByRole("button", { name: "Suivant" }).click();
    await page.locator("#search-stock-operation-item").fill("Parac");
    await page.getByText("Paracétamol 500 mg comprimé").first().click();
    await page.locator("#stockBatchUuid").click();
    await page.getByRole("option", { name: /PCM-2026-01/ }).click();
    await page.locator("#qty").fill("1");
    await choose("stockItemPackagingUOMUuid", "Boîte - 100");
    await noEnglishHere();
    await page.getByRole("button", { name: "Enregistrer" }).last().click();
    const transfer = await submitted();
    if (transfer.destinationName !== "Centre de santé Makala") throw new Error(`the transfer goes to ${transfer.destinationName}`);
    await act(transfer.operationNumber, "Approuver");
    if ((await operation(transfer.operationNumber)).status !== "COMPLETED") throw new Error("the transfer was not approved");
    const at = [await onHand(STORE), await onHand(PHARMACY)];
    if (at[0] !== 200 || at[1] !== 200) throw new Error(`after the transfer the store holds ${at[0]} and the pharmacy ${at[1]}, not 200 and 200`);
  });

  await step("ten-tablets-lost-at-the-pharmacy-are-adjusted", async () => {
    await startNew("Ajustement");
    await choose("sourceUuid", "Bondeko - Pharmacie");
    await page.locator("#responsiblePersonUuid").fill("Super");
    await page.getByRole("option", { name: "Super User" }).click();
    await choose("reasonUuid", "Perte");
    await page.getByRole("button", { name: "Suivant" }).click();
    await addBatchLine("-10");
    const adjustment = await submitted();
    await act(adjustment.operationNumber, "Approuver");
    const held = await onHand(PHARMACY);
    if (held !== 190) throw new Error(`after the loss the pharmacy holds ${held}, not 190`);
  });

  await step("a-stock-take-at-the-pharmacy-posts-the-difference", async () => {
    await startNew("Inventaire");
    await choose("sourceUuid", "Bondeko - Pharmacie");
    await page.locator("#responsiblePersonUuid").fill("Super");
    await page.getByRole("option", { name: "Super User" }).click();
    await choose("reasonUuid", "Correction d'inventaire");
    await page.getByRole("button", { name: "Suivant" }).click();
    await addBatchLine("185");
    const count = await submitted();
    await act(count.operationNumber, "Approuver");
    const held = await onHand(PHARMACY);
    if (held !== 185) throw new Error(`after the stock take the pharmacy holds ${held}, not the 185 counted`);
    await noEnglishHere();
  });

  await step("the-pharmacys-stock-status-is-downloaded", async () => {
    // By the head pharmacist, also the Stock Manager, whose scope covers the pharmacy: the
    // app shows its reports to the users whose privileges name them (an administrator's
    // are implicit, and it does not).
    const manager = await api("POST", "user", {
      username: "pharmacienne", password: MANAGER_PASSWORD, roles: ["Organizational: Pharmacist", "Stock Manager"],
      person: { names: [{ givenName: "Esther", familyName: "Mukendi" }], gender: "F" },
    });
    await api("POST", "stockmanagement/userrolescope", {
      userUuid: manager.uuid, role: "Stock Manager", permanent: true, enabled: true,
      locations: [{ locationUuid: PHARMACY }], operationTypes: TYPES.map((t) => ({ operationTypeUuid: t })),
    });
    await logIn("pharmacienne", MANAGER_PASSWORD, PHARMACY);
    await page.goto(`${base}/openmrs/spa/stock-management/reports`);
    await page.getByRole("button", { name: "Nouveau Rapport" }).click();
    await page.locator("#report").click();
    await page.getByRole("option", { name: "Rapport de l'état des stocks" }).click();
    await page.locator("#inventoryGroupBy").selectOption("LocationStockItemBatchNo");
    await page.locator("#location").selectOption({ label: "Bondeko - Pharmacie" });
    const now = new Date();
    const pad = (n) => String(n).padStart(2, "0");
    await page.locator("#date").fill(`${pad(now.getDate())}/${pad(now.getMonth() + 1)}/${now.getFullYear()}`);
    await closeTheCalendar();
    await noEnglishHere();
    await page.getByRole("button", { name: "Enregistrer" }).click();
    await visible(page.getByText("Tâche par lot créée avec succès"));
    // Listed, completed, and downloaded from its row as the browser downloads it.
    const row = page.getByRole("row", { name: /Rapport de l'état des stocks/ }).first();
    // The app opens the file in a new tab; the browser downloads it at once (Playwright
    // reports the download on the page that opened the tab).
    const downloaded = page.waitForEvent("download", { timeout: 30000 });
    await row.getByRole("button").last().click();
    const download = await downloaded;
    const csv = (await import("node:fs")).readFileSync(await download.path(), "utf8");
    for (const other of page.context().pages()) if (other !== page) await other.close();
    const lines = csv.trim().split("\n").map((l) => l.split(","));
    const batch = lines.find((l) => l.includes("PCM-2026-01"));
    if (lines[0][0] !== "Nom générique" || !batch || !batch.includes("Bondeko - Pharmacie") || !batch.includes("1.85") || !batch.includes("Boîte")) {
      throw new Error(`the stock status does not show the pharmacy's 185 tablets: ${csv}`);
    }
    if (!/^Stock Status Report-\d{14}\.csv$/.test(download.suggestedFilename())) throw new Error(`the report's file is named ${download.suggestedFilename()}`);
    await noEnglishHere();
    // The administrator again, back on the patient's chart where the walk goes on.
    await logIn();
    if (state.chartUrl) await openTheChart();
  });
}

// A date typed, the date picker's calendar closed (it stays open after Tab), so that
// nothing covers the form's buttons.
async function closeTheCalendar() {
  await page.keyboard.press("Tab");
  await page.keyboard.press("Escape");
  await page.locator(".flatpickr-calendar.open").waitFor({ state: "hidden" });
}

async function operation(number) {
  return (await api("GET", "stockmanagement/stockoperation?v=full")).results.find((o) => o.operationNumber === number);
}

async function startNew(type) {
  await page.goto(`${base}/openmrs/spa/stock-management/operations`);
  await visible(page.getByText("Opérations sur les stocks pour suivre les mouvements des stocks."));
  await page.getByText("Nouvelle opération", { exact: true }).click();
  await page.getByRole("menuitem", { name: type, exact: true }).click();
  await visible(page.getByText(`Nouveau : ${type}`));
}

async function choose(id, name) {
  await page.locator(`#${id}`).click();
  await page.getByRole("option", { name, exact: true }).click();
}

// A line for the pharmacy's paracetamol batch, in tablets, on the items step.
async function addBatchLine(quantity) {
  await page.locator("#search-stock-operation-item").fill("Parac");
  await page.getByText("Paracétamol 500 mg comprimé").first().click();
  await page.locator("#stockBatchUuid").click();
  await page.getByRole("option", { name: /PCM-2026-01/ }).click();
  await page.locator("#qty").fill(quantity);
  await choose("stockItemPackagingUOMUuid", "Comprimé - 1");
  await noEnglishHere();
  await page.getByRole("button", { name: "Enregistrer" }).last().click();
}

// The items step done, the operation saved and submitted for approval; its record.
async function submitted() {
  await visible(page.getByText("PCM-2026-01").or(page.getByText("Paracétamol 500 mg comprimé")));
  await page.getByRole("button", { name: "Suivant" }).last().click();
  await page.getByText("Oui", { exact: true }).click();
  await page.getByRole("button", { name: "Soumettre pour approbation" }).click();
  await visible(page.getByText("Opération de stock ajoutée avec succès"));
  await page.getByRole("dialog").getByRole("button", { name: "Soumettre" }).click();
  await visible(page.getByText(/L'opération a été enregistrée/));
  const all = (await api("GET", "stockmanagement/stockoperation?v=full")).results;
  const newest = all.reduce((a, b) => (a && a.dateCreated > b.dateCreated ? a : b), undefined);
  if (newest?.status !== "SUBMITTED") throw new Error(`the operation was not submitted: ${JSON.stringify(newest)}`);
  return newest;
}

// The operation's row, opened on the operations page: the actions its state and the
// manager's scope allow.
async function expand(number) {
  await page.goto(`${base}/openmrs/spa/stock-management/operations`);
  const row = page.getByRole("row", { name: new RegExp(number) });
  await row.getByRole("button").first().click();
}

// An action taken on the operation from its opened row, and confirmed.
async function act(number, action) {
  await expand(number);
  await page.getByRole("button", { name: action }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Soumettre" }).click();
  await visible(page.getByText(/L'opération a été enregistrée/));
}
