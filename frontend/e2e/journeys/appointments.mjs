// Appointments: booked from the chart; at reception her arrival starts her visit and sends her
// to triage; her check-out completes the appointment and closes the visit; a follow-up is
// moved to the afternoon, then cancelled; a missed vaccination is marked so.
// Needs: the browser logged in at reception, her chart, no visit of hers open (her arrival
// starts one).
import { api, base, logIn, openTheChart, page, patientUuid, registerThePatient, state, step, visible } from "../lib.mjs";

export async function seed() {
  await registerThePatient();
  await logIn();
  await openTheChart();
}

export async function run() {
  await step("book-an-appointment", async () => {
    await page.goto(state.chartUrl);
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
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
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
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
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
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const [done] = await api("POST", "appointments/search", { patientUuid: uuid, startDate: new Date(Date.now() - 86400e3).toISOString() });
    const open = await api("GET", `visit?patient=${uuid}&includeInactive=false`);
    if (done.status !== "Completed" || open.results.length !== 0) throw new Error(`her check-out was not recorded: ${JSON.stringify({ done, open })}`);
  });

  await step("reschedule-a-follow-up", async () => {
    // A follow-up booked from the chart at 11:00, then moved to the afternoon (within the
    // service's hours, which the form checks through the conflicts call).
    await page.goto(state.chartUrl);
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
}
