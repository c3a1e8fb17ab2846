// Administration, and the end of the day: her address and telephone edited (her estimated age
// and her province read back), another patient marked deceased with a written cause, a patient
// list kept with her added and taken off again, a triage room named, a queue added, a receptionist's account,
// her provider and a role made (then her login checked: her provider, what she may and may not
// do) and her account retired; a duplicate of her registered at another desk found, compared
// and merged into her record, and her history of changes read; then the chart again, the
// language switch to English and the logout.
// Needs: the browser logged in at reception, her chart, as registered (an estimated 34 years,
// the province of Kinshasa), and the patient found at reception (start() registers her).
import { FACILITY, api, base, clerkPassword, followAppMenuLink, logIn, openTheChart, page, patientUuid, registerThePatient, setFrench, state, step, visible } from "../lib.mjs";

export async function seed() {
  await registerThePatient();
  await logIn();
  await openTheChart();
}

export async function run() {
  await step("edit-the-patient", async () => {
    await page.goto(state.chartUrl);
    await page.getByRole("button", { name: /Actions/ }).first().click();
    await page.getByRole("menuitem", { name: "Modifier le patient" }).click();
    await page.waitForURL(/\/edit/, { timeout: 30000 });
    // The form opens on what was registered: her estimated age, her province.
    await visible(page.locator("input#givenName"));
    if ((await page.getByLabel("Âge estimé en années").inputValue()) !== "34") throw new Error("the estimated age was not read back");
    if ((await page.locator("input#stateProvince").inputValue()) !== "Kinshasa") throw new Error("the province was not read back");
    await page.locator("input#cityVillage").fill("Lingwala");
    await page.keyboard.press("Escape");
    await page.locator("input#phone").fill("0812345678");
    await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
    await visible(page.getByText("Les informations du patient ont été modifiées"));
    // The new address is the preferred one and keeps the province; the age stays estimated.
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const person = await api("GET", `person/${uuid}?v=custom:(birthdateEstimated,preferredAddress:(stateProvince,cityVillage),attributes:(value))`);
    if (!person.birthdateEstimated || person.preferredAddress?.cityVillage !== "Lingwala" || person.preferredAddress?.stateProvince !== "Kinshasa" || person.attributes[0]?.value !== "0812345678")
      throw new Error(`the edit was not stored as made: ${JSON.stringify(person)}`);
  });

  await step("mark-a-patient-deceased", async () => {
    const [helene] = (await api("GET", "patient?q=Mbuyi&v=custom:(uuid)")).results;
    await page.goto(`${base}/openmrs/spa/patient/${helene.uuid}/chart`);
    await visible(page.getByText("Hélène Mbuyi"));
    await page.getByRole("button", { name: /Actions/ }).first().click();
    await page.getByRole("menuitem", { name: "Marquer comme décédé" }).click();
    // The causes are the answers of the content's cause-of-death question; "Autre" asks for text.
    await visible(page.getByText("Paludisme grave avec atteinte cérébrale"));
    await page.getByText("Autre", { exact: true }).click();
    await page.locator("input#freeTextCauseOfDeath").fill("Morsure de serpent");
    await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
    await visible(page.getByText("Le patient a été déclaré décédé"));
    await visible(page.getByText("Décédé", { exact: true }));
    const person = await api("GET", `person/${helene.uuid}?v=custom:(dead,deathDate,causeOfDeath,causeOfDeathNonCoded)`);
    if (!person.dead || !person.deathDate || person.causeOfDeath !== null || person.causeOfDeathNonCoded !== "Morsure de serpent")
      throw new Error(`the death was not stored as recorded: ${JSON.stringify(person)}`);
  });

  await step("keep-a-patient-list", async () => {
    await page.goto(`${base}/openmrs/spa/home/patient-lists`);
    await page.getByRole("button", { name: "Nouvelle liste" }).click();
    await page.getByLabel("Nom de la liste").fill("Femmes enceintes à revoir");
    await page.getByText("Choisir le type de cohorte").click();
    await page.getByRole("option", { name: "Ma liste" }).click();
    await page.getByLabel(/Décrivez l'objet/).fill("Consultations prénatales du mardi");
    await page.getByRole("button", { name: "Créer une liste" }).click();
    await visible(page.getByText("Liste créée avec succès"));
    await page.getByRole("tab", { name: "Mes listes" }).click();
    await page.getByRole("link", { name: "Femmes enceintes à revoir" }).click();
    await visible(page.getByText("Consultations prénatales du mardi"));
    // A patient found by name and added to the list.
    await page.getByRole("button", { name: "Ajouter le patient à la liste" }).first().click();
    await page.getByRole("searchbox").last().fill("Grâce Kapinga");
    await page.keyboard.press("Enter");
    await page.locator('[data-openmrs-role="Search Results"] button', { hasText: "Grâce Kapinga" }).first().click();
    await visible(page.getByText("Patient ajouté à la liste"));
    await visible(page.getByRole("row", { name: /Grâce Kapinga/ }));
    const [list] = (await api("GET", "cohortm/cohort?q=enceintes&v=custom:(uuid,size)")).results;
    if (list?.size !== 1) throw new Error(`the list does not hold her: ${JSON.stringify(list)}`);
  });

  await step("take-her-off-the-list", async () => {
    await page.getByRole("row", { name: /Grâce Kapinga/ }).getByRole("button").last().click();
    const dialog = page.getByRole("dialog");
    await visible(dialog.getByText("Retirer le patient de la liste"));
    await dialog.getByRole("button", { name: "Retirer de la liste" }).click();
    await page.getByRole("row", { name: /Grâce Kapinga/ }).waitFor({ state: "detached", timeout: 30000 });
    // Her membership ended, kept: the list is empty.
    const [list] = (await api("GET", "cohortm/cohort?q=enceintes&v=custom:(uuid,size)")).results;
    const members = await api("GET", `cohortm/cohortmember?cohort=${list.uuid}&includeAll=true&v=custom:(endDate)`);
    if (list.size !== 0 || members.results.length !== 1 || !members.results[0].endDate)
      throw new Error(`her membership was not ended: ${JSON.stringify({ list, members })}`);
  });

  await step("the-system-administration-page", async () => {
    // The administration page the application menu leads to: a card for each module's
    // administration, in French (the legacy OpenMRS pages this distribution has not are
    // left out).
    await followAppMenuLink("Administration du système");
    await page.waitForURL(/\/spa\/system-administration/, { timeout: 30000 });
    await visible(page.getByText("Gérer les files d'attente de service"));
    await visible(page.getByText("Gestion des files d'attente"));
    if (await page.getByText("Administration du module Legacy").count()) throw new Error("the legacy administration card is shown");
  });

  await step("an-administrator-names-a-triage-room", async () => {
    // The service-queues admin page, from its card: a room for the triage queue, where the
    // nurse calls from.
    await page.getByText("Gérer les files d'attente de service").click();
    await page.waitForURL(/\/home\/service-queues\/admin/, { timeout: 30000 });
    await page.getByRole("button", { name: "Ajouter une salle" }).first().click();
    await page.locator("#queueRoomName").fill("Salle de triage 1");
    await page.locator("select#queueRoomLocation").selectOption({ label: "Bondeko - Triage" });
    await page.locator("select#queueRoomService option", { hasText: "Bondeko - File de triage" }).waitFor({ state: "attached", timeout: 30000 });
    await page.locator("select#queueRoomService").selectOption({ label: "Bondeko - File de triage" });
    await page.locator("#description").fill("Près de l'entrée");
    await page.locator('button[type="submit"]').click();
    await visible(page.getByText("Salle créée"));
    await visible(page.getByRole("cell", { name: "Salle de triage 1" }));
    const rooms = await api("GET", "queue-room?v=custom:(name,queue:(display))");
    if (rooms.results[0]?.queue?.display !== "Bondeko - File de triage") throw new Error(`the room was not kept: ${JSON.stringify(rooms)}`);
  });

  await step("an-administrator-adds-a-queue", async () => {
    // The same page: a maternity queue at the maternity, which no content package defines.
    await page.goto(`${base}/openmrs/spa/home/service-queues/admin`);
    await page.getByRole("button", { name: "Ajouter une file d'attente" }).first().click();
    await page.locator("#queueName").fill("Bondeko - File de maternité");
    await page.locator("select#queueServiceType option", { hasText: "Service de maternité" }).waitFor({ state: "attached", timeout: 30000 });
    await page.locator("select#queueServiceType").selectOption({ label: "Service de maternité" });
    await page.locator("select#location").selectOption({ label: "Bondeko - Consultation" });
    await page.locator("#description").fill("Consultations prénatales");
    await page.locator('button[type="submit"]').click();
    await visible(page.getByText("File d'attente créée"));
    const queues = await api("GET", "queue?v=custom:(uuid,name,service:(display),location:(display))");
    const added = queues.results.find((q) => q.name === "Bondeko - File de maternité");
    if (added?.service?.display !== "Service de maternité" || added?.location?.display !== "Bondeko - Consultation")
      throw new Error(`the queue was not kept: ${JSON.stringify(queues)}`);
  });

  await step("administer-accounts", async () => {
    // From the application menu, as an administrator finds it.
    await followAppMenuLink("Comptes et rôles");
    await page.waitForURL(/\/spa\/accounts/, { timeout: 30000 });
    await visible(page.getByRole("cell", { name: "admin", exact: true }));

    // A receptionist's account, with a role of the content.
    await page.getByRole("button", { name: "Créer un compte" }).click();
    let dialog = page.getByRole("dialog");
    await dialog.getByLabel("Prénom").fill("Bénédicte");
    await dialog.getByLabel("Nom de famille").fill("Tshala");
    await dialog.getByLabel("Nom d'utilisateur").fill("accueil.benedicte");
    await dialog.getByLabel("Mot de passe", { exact: true }).fill(clerkPassword);
    await dialog.getByLabel("Confirmer le mot de passe").fill(clerkPassword);
    await dialog.getByText("Application: Registers Patients", { exact: true }).click();
    await dialog.getByRole("button", { name: "Créer", exact: true }).click();
    await visible(page.getByRole("cell", { name: "accueil.benedicte", exact: true }));
    const [clerk] = (await api("GET", "user?username=accueil.benedicte&v=custom:(uuid,person:(uuid),roles:(display))")).results;
    if (clerk?.roles?.[0]?.display !== "Application: Registers Patients") throw new Error(`the account was not stored with its role: ${JSON.stringify(clerk)}`);

    // Her provider, with the facility's identifier.
    await page.getByRole("tab", { name: "Prestataires" }).click();
    await page.getByRole("button", { name: "Créer un prestataire" }).click();
    dialog = page.getByRole("dialog");
    await dialog.getByLabel("Compte").selectOption({ label: "Bénédicte Tshala (accueil.benedicte)" });
    await dialog.getByLabel("Identifiant").fill("ACC-12");
    await dialog.getByRole("button", { name: "Créer", exact: true }).click();
    await visible(page.getByRole("cell", { name: "ACC-12", exact: true }));

    // A role of this server, inheriting one of the content's.
    await page.getByRole("tab", { name: "Rôles" }).click();
    await page.getByRole("button", { name: "Créer un rôle" }).click();
    dialog = page.getByRole("dialog");
    await dialog.getByLabel("Nom du rôle").fill("Accueil de nuit");
    await dialog.getByLabel("Description").fill("Accueil des urgences la nuit");
    await dialog.getByRole("group", { name: "Rôles hérités" }).getByText("Application: Registers Patients", { exact: true }).click();
    await dialog.getByRole("button", { name: "Créer", exact: true }).click();
    await visible(page.getByRole("cell", { name: "Accueil de nuit", exact: true }));
    const role = await api("GET", "role/Accueil%20de%20nuit?v=custom:(definedBy,inheritedRoles:(display))");
    if (role.definedBy !== "api" || role.inheritedRoles[0]?.display !== "Application: Registers Patients") throw new Error(`the role was not stored as made: ${JSON.stringify(role)}`);

    // She logs in, records as her provider, may search patients but not change settings.
    const auth = "Basic " + Buffer.from(`accueil.benedicte:${clerkPassword}`).toString("base64");
    const as = (method, path, body) =>
      fetch(`${base}/openmrs/ws/rest/v1/${path}`, { method, headers: { Authorization: auth, "Content-Type": "application/json" }, body: body && JSON.stringify(body) });
    const session = await (await as("GET", "session?v=custom:(authenticated,currentProvider)")).json();
    const [provider] = (await api("GET", "provider?q=ACC-12&v=custom:(uuid,person:(uuid))")).results;
    if (!session.authenticated || session.currentProvider?.uuid !== provider?.uuid || provider?.person?.uuid !== clerk.person.uuid)
      throw new Error(`the new account does not log in as its provider: ${JSON.stringify({ session, provider })}`);
    if ((await as("GET", "patient?q=Mbuyi")).status !== 200) throw new Error("the new account cannot search patients");
    const refused = await as("POST", "systemsetting", { property: "accueil.test", value: "x" });
    if (refused.status !== 403) throw new Error(`the new account changed a setting: ${refused.status}`);

    // She leaves: her account is retired from the page, and she can no longer log in.
    await page.getByRole("dialog").waitFor({ state: "hidden", timeout: 30000 });
    await page.getByRole("tab", { name: "Utilisateurs" }).click();
    const herRow = page.getByRole("row").filter({ has: page.getByRole("cell", { name: "accueil.benedicte", exact: true }) });
    await herRow.getByRole("button", { name: "Retirer" }).click();
    dialog = page.getByRole("dialog");
    await dialog.getByLabel("Motif").fill("fin de contrat");
    await dialog.getByRole("button", { name: "Retirer", exact: true }).click();
    await visible(herRow.getByText("Retiré", { exact: true }));
    const after = await (await as("GET", "session?v=custom:(authenticated)")).json();
    if (after.authenticated !== false) throw new Error(`a retired account still logs in: ${JSON.stringify(after)}`);
    await page.getByRole("dialog").waitFor({ state: "hidden", timeout: 30000 });
  });

  await step("merge-a-duplicate", async () => {
    // She was registered again at another desk, without an accent, with her telephone, and
    // seen once on that second record.
    const sources = await api("GET", "idgen/identifiersource?v=default");
    const { identifier } = await api("POST", `idgen/identifiersource/${sources.results[0].uuid}/identifier`, {});
    const twin = await api("POST", "patient", {
      person: {
        names: [{ givenName: "Grace", familyName: "Kapinga" }],
        gender: "F",
        birthdate: "1992-03-14",
        attributes: [{ attributeType: "14d4f066-15f5-102d-96e4-000c29c2a5d7", value: "0812345678" }],
      },
      identifiers: [{ identifier, identifierType: sources.results[0].identifierType.uuid, preferred: true }],
    });
    const day = new Date(Date.now() - 30 * 24 * 3600 * 1000).toISOString().slice(0, 10);
    const visit = await api("POST", "visit", {
      patient: twin.uuid,
      visitType: "f19c6fdb-bd43-41e7-bb4c-cc892e489c25",
      location: FACILITY,
      startDatetime: `${day}T08:00:00.000+0000`,
      stopDatetime: `${day}T09:00:00.000+0000`,
    });

    // A data manager finds the pair among the likely duplicates, compares them and keeps hers.
    await followAppMenuLink("Dossiers des patients");
    await page.waitForURL(/\/spa\/records/, { timeout: 30000 });
    const row = page.getByRole("row").filter({ hasText: "Grace Kapinga" }).filter({ hasText: "Grâce Kapinga" });
    await visible(row);
    await visible(row.getByText("Même téléphone"));
    await row.getByRole("button", { name: "Comparer" }).click();
    const dialog = page.getByRole("dialog");
    await visible(dialog.getByText("Comparer et fusionner"));
    await visible(dialog.getByText("0812345678"));
    const pairs = await api("GET", "patient/duplicates?v=custom:(uuid)");
    const pair = pairs.results.find((p) => [p.patientA.uuid, p.patientB.uuid].includes(twin.uuid));
    const keep = pair.patientA.uuid === patientUuid() ? "Le premier dossier" : "Le second dossier";
    await dialog.getByText(keep, { exact: true }).click();
    await dialog.getByRole("button", { name: "Fusionner" }).click();
    await visible(page.getByText("Dossiers fusionnés"));

    // Her record gained the visit and the second identifier; the other is voided.
    const merged = await api("GET", `visit/${visit.uuid}?v=custom:(patient:(uuid))`);
    const other = await api("GET", `patient/${twin.uuid}?v=full`);
    const hers = await api("GET", `patient/${patientUuid()}?v=custom:(identifiers:(identifier))`);
    if (merged.patient.uuid !== patientUuid() || !other.voided || !hers.identifiers.some((i) => i.identifier === identifier))
      throw new Error(`the merge was not stored: ${JSON.stringify({ merged, other: other.voided, hers })}`);
  });

  await step("her-change-history", async () => {
    await page.getByRole("tab", { name: "Historique des modifications" }).click();
    await page.getByRole("searchbox").fill("Kapinga");
    await page.getByRole("button", { name: /Grâce Kapinga/ }).first().click();
    // Her demographics as edited this morning (the address), then the visit the merge
    // moved to her record: one kind of record at a time, as a data manager reads them (the
    // clinical records' own values, free text of the day's forms among them, are data, not
    // the page's language).
    await page.locator("select#audit-type").selectOption({ label: "Patient" });
    await visible(page.getByRole("cell", { name: /Lingwala/ }));
    // Her changes made by the administrator: the same, filtered on the server.
    await page.locator("select#audit-user").selectOption({ label: "admin" });
    await visible(page.getByRole("cell", { name: /Lingwala/ }));
    await page.locator("select#audit-type").selectOption({ label: "Visite" });
    await visible(page.getByRole("cell", { name: "Visite", exact: true }));
    await page.getByRole("cell", { name: /Lingwala/ }).waitFor({ state: "detached", timeout: 30000 });
    const audit = await api("GET", `audit?patient=${patientUuid()}&type=visits&v=default`);
    if (!audit.results.some((e) => e.action === "changed" && e.changes.some((c) => c.field === "patient" && c.after === patientUuid())))
      throw new Error(`the moved visit is not in her history: ${JSON.stringify(audit.results)}`);
  });

  await step("back-to-the-chart", async () => {
    await page.goto(state.chartUrl);
    await visible(page.getByText("Résumé patient"));
    await visible(page.getByText("Grâce Kapinga"));
  });

  setFrench(false);
  await step("switch-to-english", async () => {
    await page.getByRole("button", { name: "Mon compte" }).click();
    await visible(page.getByRole("button", { name: "Se déconnecter" }));
    // The first "Modifier" belongs to the language line. Activated from the keyboard, as
    // the log-out below: the chart's workspace rail, laid out late, once covered it and took
    // a pointer click (a CI run of 2026-11-28).
    const change = page.getByRole("button", { name: "Modifier" }).first();
    await visible(change);
    await change.focus();
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog");
    await dialog.getByText("English", { exact: true }).click();
    await dialog.getByRole("button", { name: "Modifier" }).click();
    await visible(page.getByText("Patient summary"));
    await visible(page.getByText("Grâce Kapinga"));
    await visible(page.getByText("Female"));
  });

  await step("log-out", async () => {
    await page.getByRole("button", { name: "My account" }).click();
    // Activated from the keyboard, as a keyboard user does: the account panel's last button
    // can sit below the fold of the chart, where a pointer click lands on the vitals header
    // (seen once in a CI run, the panel opened while the chart was still laying out).
    const logout = page.getByRole("button", { name: /Log ?out/i }).first();
    await visible(logout);
    await logout.focus();
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/login/, { timeout: 30000 });
    await visible(page.getByText(/Username/));
  });
}
