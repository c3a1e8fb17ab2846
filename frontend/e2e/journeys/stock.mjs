// Stock, in the stock management app (@openmrs/esm-stock-management-app, at
// /openmrs/spa/stock-management): the stock manager, whose user role scope covers the
// central store and the pharmacy, records a delivery of amoxicillin from the provincial
// depot at the central store (batch, expiry, five boxes of 100 at a purchase price) and
// submits it for approval; then approves it, and the store holds 500 capsules of the batch.
// Needs: the browser logged in (as the administrator, in French). Made through the API
// first, as the stock manager would have made them on the items, sources and scopes pages:
// the administrator's user role scope, the depot as a stock source, and the stock item for
// amoxicillin 500 mg with its units (capsule, box of 100).
//
// The pinned app (3.2.1) writes some of its labels in English whatever the language, with no
// translation key the configuration could override: the "Start New" menu, the operations
// table's "Operation" filter and "Number" column, the operation statuses as the server names
// them, the form's step titles ("Details", "Submit/Complete"), "Responsible Person Required",
// "Out of Stock", and the action named in the confirmation and its notice ("Submit",
// "Approve"). The French check here
// covers the labels it does translate, which config.json's overrides complete.
import { api, base, logIn, page, step, visible } from "../lib.mjs";

const STORE = "984bac3b-db96-459e-b52b-76a59069e6c4";
const PHARMACY = "f7cfa24b-e54f-42ef-83a3-1e256e74d5da";
const AMOXICILLIN = "6b5ba414-cd71-43c3-9872-ddb2ae0e0f2e";
const CAPSULE = "1608AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
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

export async function run() {
  await step("the-stock-managers-setup", async () => {
    const session = await api("GET", "session");
    await api("POST", "stockmanagement/userrolescope", {
      userUuid: session.user.uuid, role: "System Developer", permanent: true, enabled: true,
      locations: [{ locationUuid: STORE }, { locationUuid: PHARMACY }],
      operationTypes: TYPES.map((t) => ({ operationTypeUuid: t })),
    });
    await api("POST", "stockmanagement/stocksource", { name: "CDR Kinshasa", acronym: "CDR" });
    item = (await api("POST", "stockmanagement/stockitem", { drugUuid: AMOXICILLIN, hasExpiration: true, dispensingUnitUuid: CAPSULE })).uuid;
    await api("POST", "stockmanagement/stockitempackaginguom", { stockItemUuid: item, packagingUomUuid: CAPSULE, factor: 1 });
    await api("POST", "stockmanagement/stockitempackaginguom", { stockItemUuid: item, packagingUomUuid: BOX, factor: 100 });
    await page.goto(`${base}/openmrs/spa/stock-management/operations`);
    await visible(page.getByText("Opérations sur les stocks pour suivre les mouvements des stocks."));
    await noEnglishHere();
  });

  await step("a-delivery-is-received-at-the-central-store", async () => {
    await page.getByText("Start New").click();
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
    await page.locator("#search-stock-operation-item").fill("Amox");
    await page.getByText("Amoxicilline 500 mg gélule").first().click();
    await page.locator("#batchNumber").fill("AMX-2026-01");
    const expiry = new Date(Date.now() + 400 * 86400000);
    const pad = (n) => String(n).padStart(2, "0");
    await page.locator("#expiration-input").fill(`${pad(expiry.getDate())}/${pad(expiry.getMonth() + 1)}/${expiry.getFullYear()}`);
    await page.keyboard.press("Tab");
    await page.locator("#qty").fill("5");
    await page.locator("#stockItemPackagingUOMUuid").click();
    await page.getByRole("option", { name: "Boîte - 100" }).click();
    await page.locator("#purchaseprice").fill("12.5");
    await noEnglishHere();
    await page.getByRole("button", { name: "Enregistrer" }).last().click();
    await visible(page.getByText("AMX-2026-01"));
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
    if (receipt?.status !== "SUBMITTED" || receipt.stockOperationItems[0]?.batchNo !== "AMX-2026-01" || receipt.stockOperationItems[0]?.quantity !== 5 || receipt.sourceName !== "CDR Kinshasa") {
      throw new Error(`the delivery was not kept as entered: ${JSON.stringify(receipt)}`);
    }
    if ((await onHand(STORE)) !== 0) throw new Error("a delivery awaiting approval is already in stock");
    operationNumber = receipt.operationNumber;
  });

  await step("the-stock-manager-approves-the-delivery", async () => {
    await page.goto(`${base}/openmrs/spa/stock-management/operations`);
    // The operation's row, opened: the actions its state and the manager's scope allow.
    const row = page.getByRole("row", { name: new RegExp(operationNumber) });
    await row.getByRole("button").first().click();
    await page.getByRole("button", { name: "Approuver" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Soumettre" }).click();
    await visible(page.getByText(/L'opération a été enregistrée/));
    const receipt = (await api("GET", "stockmanagement/stockoperation?v=full")).results.find((o) => o.operationNumber === operationNumber);
    if (receipt?.status !== "COMPLETED") throw new Error(`the delivery is not completed: ${receipt?.status}`);
    const held = await onHand(STORE);
    if (held !== 500) throw new Error(`the store holds ${held} capsules, not 500`);
    await noEnglishHere();
  });
}
