// Billing: the visit billed from the chart's billing history (beside the check-in's bill), then
// finalised and paid in cash at the cash desk, its receipt downloaded as a PDF.
// Needs: the browser logged in at reception on her chart, her visit open, the bill of her
// check-in (state.checkInReceipt). It leaves state.billUrl.
import { readFileSync } from "node:fs";
import { api, base, billTheCheckIn, logIn, openTheChart, page, registerThePatient, startTheVisit, state, step, visible } from "../lib.mjs";

export async function seed() {
  await registerThePatient();
  await startTheVisit();
  await billTheCheckIn();
  await logIn();
  await openTheChart();
}

export async function run() {
  await step("bill-the-visit-from-the-chart", async () => {
    // The chart's billing history: the check-in's bill, then a bill made for her visit, two
    // dressings priced in the payment mode chosen.
    await page.getByRole("link", { name: "Historique des facturations" }).click();
    await visible(page.getByRole("cell", { name: state.checkInReceipt }));
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
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const bill = (await api("GET", `billing/bill?patientUuid=${uuid}&v=full`)).results.find((b) => b.receiptNumber !== state.checkInReceipt);
    if (bill?.status !== "PENDING" || bill.total !== 3001 || !bill.visit) throw new Error(`the bill was not kept as made: ${JSON.stringify(bill)}`);
    state.billUrl = `${base}/openmrs/spa/home/billing/patient/${uuid}/${bill.uuid}`;
    await visible(page.getByRole("cell", { name: bill.receiptNumber }));
  });

  await step("the-cashier-takes-the-payment", async () => {
    // At the cash desk: the bill among those awaiting payment, finalised, paid in cash (the
    // amount due exactly, with its hundredths), and its receipt printed from the server.
    await page.goto(`${base}/openmrs/spa/home/billing`);
    await visible(page.getByRole("row", { name: /Grâce Kapinga/ }).first());
    await page.goto(state.billUrl);
    await page.getByRole("button", { name: "Finaliser la facture" }).first().click();
    await page.getByRole("dialog").getByRole("button", { name: "Finaliser" }).click();
    await visible(page.getByText("La facture a été finalisée"));
    await page.locator("#paymentMethod").click();
    await page.getByRole("option", { name: "Espèces" }).click();
    await page.getByPlaceholder("Saisir le montant").fill("3001");
    await page.getByRole("button", { name: "Enregistrer le paiement" }).click();
    await visible(page.getByText("Paiement enregistré"));
    const bill = await api("GET", `billing/bill/${state.billUrl.split("/").pop()}`);
    if (bill.status !== "PAID" || bill.payments.length !== 1 || bill.payments[0].amountTendered !== 3001) throw new Error(`the payment was not kept: ${JSON.stringify(bill)}`);
    await visible(page.getByText("PAYÉ"));
    const download = page.waitForEvent("download", { timeout: 30000 });
    await page.getByRole("button", { name: "Imprimer le reçu" }).click();
    const receipt = await (await download).path();
    const head = readFileSync(receipt).subarray(0, 8).toString();
    if (head !== "%PDF-1.4") throw new Error(`the receipt is not a PDF: ${head}`);
    await page.goto(state.chartUrl);
    await visible(page.getByText("Grâce Kapinga"));
  });
}
