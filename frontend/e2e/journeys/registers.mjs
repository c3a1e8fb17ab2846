// Registers: what the paper register recorded while the computers were down, entered
// afterwards through the fast data entry app ("Saisie rapide de données"): the vital signs of
// a patient seen three days ago, found by her identifier and dated on the register's day (the
// form's date question); each entry is an encounter of the register's form in a visit of its
// own, made by the server as the content's visit assignment says (`visits.assignmentHandler`:
// an outpatient visit to the end of that day).
// Needs: the browser logged in at reception. It makes its own patient, so that her visit
// of the register meets no other visit of hers.
import { api, base, followAppMenuLink, logIn, page, RECEPTION, state, step, visible } from "../lib.mjs";

export async function seed() {
  await logIn();
}

export async function run() {
  let patient;
  let identifier;
  await step("a-patient-of-the-paper-register", async () => {
    // Registered earlier; her consultation of the day was written on paper.
    const sources = await api("GET", "idgen/identifiersource?v=default");
    const source = sources.results[0];
    ({ identifier } = await api("POST", `idgen/identifiersource/${source.uuid}/identifier`, {}));
    patient = await api("POST", "patient", {
      person: { names: [{ givenName: "Joseph", familyName: "Ilunga" }], gender: "M", birthdate: "1981-03-14" },
      identifiers: [{ identifier, identifierType: source.identifierType.uuid, location: RECEPTION, preferred: true }],
    });
  });

  await step("the-fast-data-entry-app-lists-the-registers", async () => {
    await page.goto(`${base}/openmrs/spa/home`);
    await followAppMenuLink("Saisie rapide de données");
    await page.waitForURL(/\/spa\/forms/, { timeout: 30000 });
    await visible(page.getByRole("heading", { name: "Saisie rapide de données" }));
    await page.getByRole("tab", { name: /^Registres/ }).click();
    const panel = page.getByRole("tabpanel").filter({ visible: true });
    await visible(panel.getByRole("cell", { name: "Signes vitaux" }));
    await visible(panel.getByRole("cell", { name: "Consultation externe" }));
  });

  await step("enter-her-vital-signs-from-the-register", async () => {
    const panel = page.getByRole("tabpanel").filter({ visible: true });
    await panel.getByRole("row", { name: /Signes vitaux/ }).getByRole("link", { name: "Remplir le formulaire" }).click();
    await page.waitForURL(/\/spa\/forms\/form\//, { timeout: 30000 });
    // The next patient of the register, found by her identifier.
    await page.getByRole("searchbox").first().fill(identifier);
    await page.getByText("Joseph Ilunga").first().click();
    await visible(page.getByLabel("Température (°C)"));
    // The day the register recorded, three days ago, typed into the date's segments (day,
    // month, year: the picker is French).
    const day = new Date(Date.now() - 3 * 86400e3);
    state.registerDay = day.toISOString().slice(0, 10);
    const typed = [day.getDate(), day.getMonth() + 1].map((n) => String(n).padStart(2, "0")).join("") + day.getFullYear();
    await page.getByRole("group", { name: "Date des mesures" }).getByRole("spinbutton").first().click();
    await page.keyboard.type(typed);
    await page.getByLabel("Température (°C)").fill("38.4");
    await page.getByLabel("Poids (kg)").fill("71");
    // The last entry of the register: saved, and the session ended.
    await page.getByRole("button", { name: "Sauvegarder et terminer" }).click();
    const dialog = page.getByRole("dialog").filter({ hasText: "Voulez-vous sauvegarder le formulaire actuel et quitter le flux de travail?" });
    await dialog.getByRole("button", { name: "Terminer" }).click();
    // Back on the list of registers once the form is saved.
    await page.waitForURL(/\/spa\/forms\/?$/, { timeout: 30000 });
    await visible(page.getByRole("heading", { name: "Saisie rapide de données" }));
  });

  await step("her-register-entry-is-a-visit-of-its-own", async () => {
    // The encounter of the form, on the register's day, in an outpatient visit from its
    // moment to the end of that day.
    const encounters = await api("GET", `encounter?patient=${patient.uuid}&v=custom:(uuid,form:(uuid),visit:(uuid,visitType:(display),startDatetime,stopDatetime),obs:(display))`);
    const entry = encounters.results.find((e) => e.form?.uuid === "7aa921d9-48bf-3760-82b9-5e62713b25bf");
    const obs = (entry?.obs ?? []).map((o) => o.display).join(", ");
    if (!entry || !obs.includes("38.4") || !obs.includes("71")) throw new Error(`the register's vital signs were not saved: ${JSON.stringify(encounters)}`);
    if (entry.visit?.visitType?.display !== "Consultation externe" || entry.visit.stopDatetime !== `${state.registerDay}T23:59:59.999+0000` || !entry.visit.startDatetime.startsWith(state.registerDay)) {
      throw new Error(`the register's entry is not in a visit of its own: ${JSON.stringify(entry.visit)}`);
    }
  });
}
