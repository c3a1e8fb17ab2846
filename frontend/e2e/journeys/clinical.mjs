// Clinical care in her visit: vital signs recorded (the body mass index worked out, the fever
// and the high pressure flagged, the content's fever flag shown on her summary and dismissed), the content's forms listed, filled and saved as the server
// keeps them (the consultation with its group of coded answers, the vital signs, the HIV
// enrolment), a visit note with its primary diagnosis; the care record: an allergy, a
// condition and a vaccination; an enrolment in the HIV programme and its change of state, a
// note pinned to the chart, and a photograph attached to the chart and viewed.
// Needs: the browser logged in at reception on her chart, her visit open.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { api, logIn, openTheChart, page, registerThePatient, startTheVisit, state, step, visible } from "../lib.mjs";

export async function seed() {
  await registerThePatient();
  await startTheVisit();
  await logIn();
  await openTheChart();
}

async function openForm(name) {
  // From a fresh chart: a closed form leaves its workspace's layer over the forms panel.
  await page.reload();
  await page.getByRole("button", { name: "Formulaires cliniques" }).first().click();
  await page.getByRole("cell", { name, exact: true }).first().getByText(name).click();
}
async function savedObs(encounterType) {
  const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
  const found = await api("GET", `encounter?patient=${uuid}&encounterType=${encounterType}&v=custom:(uuid,obs:(display))`);
  return (found.results[0]?.obs ?? []).map((o) => o.display).join(" | ");
}

export async function run() {
  await step("record-vital-signs", async () => {
    await page.getByRole("button", { name: "Enregistrer les signes vitaux" }).first().click();
    // Each input's id ends with the vital it records.
    const field = (name) => page.locator(`input[id$="-${name}"]`).first();
    await visible(field("temperature"));
    await field("temperature").fill("38.6");
    await field("systolicBloodPressure").fill("150");
    await field("diastolicBloodPressure").fill("95");
    await field("pulse").fill("88");
    await field("respiratoryRate").fill("18");
    await field("oxygenSaturation").fill("97");
    await field("weight").fill("62");
    await field("height").fill("165");
    await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
    await visible(page.getByText("Signes vitaux et données biométriques enregistrés"));
    // The table shows the values, the fever and the high pressure flagged as abnormal.
    await visible(page.getByText("38.6", { exact: false }));
    await visible(page.getByText("150 / 95", { exact: false }));
    await visible(page.getByText("22.8", { exact: false }));
    // The fever and the high blood pressure are flagged against the concepts' ranges.
    if ((await page.locator('[class*="abnormal"], [class*="critical"], [class*="high"]').count()) === 0) {
      throw new Error("no value is flagged as abnormal");
    }
  });

  await step("the-fever-flag", async () => {
    // The content's flag "Fièvre du jour" (openmrs_config/flags/) holds for her now that
    // 38.6 °C was recorded today: the summary shows it as a risk (the runtime evaluates the
    // flags when the app reads them). The edit panel dismisses it for her.
    const message = "Fièvre relevée aujourd'hui (38 °C ou plus)";
    await page.goto(state.chartUrl);
    await visible(page.getByText(message));
    await visible(page.getByText("🚩"));
    await page.getByRole("button", { name: "Modifier les drapeaux" }).click();
    await visible(page.getByText("Modifier les drapeaux du patient"));
    const toggle = page.getByRole("switch").first();
    await visible(toggle);
    if ((await toggle.getAttribute("aria-checked")) !== "true") throw new Error("the fever flag is not shown as active");
    // Carbon's toggle: its drawn switch, in the label, takes the click.
    await page.locator(`[id="${await toggle.getAttribute("id")}_label"]`).click();
    if ((await toggle.getAttribute("aria-checked")) !== "false") throw new Error("the fever flag's switch did not turn off");
    await page.getByRole("button", { name: "Sauvegarder et fermer" }).last().click();
    await visible(page.getByText("Les drapeaux ont été mis à jour"));
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const flags = await api("GET", `patientflags/patientflag?patient=${uuid}&v=full`);
    const fever = flags.results.find((f) => f.flag.display === "Fièvre du jour");
    if (!fever || fever.voided !== true) throw new Error(`the fever flag was not dismissed: ${JSON.stringify(flags.results)}`);
    await page.getByText(message).first().waitFor({ state: "hidden" });
  });

  await step("clinical-forms-list", async () => {
    await page.getByRole("button", { name: "Formulaires cliniques" }).first().click();
    for (const form of ["Signes vitaux", "Consultation externe", "Inscription dans les soins VIH"]) {
      await visible(page.getByText(form, { exact: true }));
    }
  });

  await step("fill-the-consultation-form", async () => {
    await page.getByRole("cell", { name: "Consultation externe", exact: true }).first().getByText("Consultation externe").click();
    await visible(page.getByText("Motif de consultation"));
    await page.getByLabel("Motif de consultation").fill("Fièvre depuis trois jours");
    // A coded answer inside the examination's obs group, and free text.
    await page.getByText("Bon", { exact: true }).first().click();
    await page.getByLabel("Plan de prise en charge").fill("Test de diagnostic rapide du paludisme");
    await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
    await visible(page.getByText("Formulaire enregistré"));
    // What the server recorded: the text, and the group holding the coded answer.
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const found = await api("GET", `encounter?patient=${uuid}&encounterType=91edcf31-cf56-43c3-a7d8-b8097fbd0035&v=custom:(uuid,form:(display),obs:(display,groupMembers:(display)))`);
    if (found.results[0]?.form?.display !== "Consultation externe") throw new Error(`the encounter does not name its form: ${JSON.stringify(found.results[0]?.form)}`);
    const obs = found.results[0]?.obs ?? [];
    const displays = obs.map((o) => o.display).join(" | ");
    if (!displays.includes("Fièvre depuis trois jours")) throw new Error(`the chief complaint was not saved: ${displays}`);
    const group = obs.find((o) => (o.groupMembers ?? []).length > 0);
    if (!group || !group.groupMembers.some((m) => /Bon/.test(m.display))) throw new Error(`the examination group was not saved: ${JSON.stringify(obs)}`);
  });

  await step("fill-the-vital-signs-form", async () => {
    await openForm("Signes vitaux");
    await visible(page.getByLabel("Température (°C)"));
    await page.getByLabel("Température (°C)").fill("37.2");
    await page.getByLabel("Pouls (battements/min)").fill("76");
    await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
    await visible(page.getByText("Formulaire enregistré"));
    const obs = await savedObs("023c2721-8ffa-4ce2-a1d4-7a2a3ec45f42");
    if (!obs.includes("37.2") || !obs.includes("76")) throw new Error(`the vital signs were not saved: ${obs}`);
  });

  await step("fill-the-hiv-enrolment-form", async () => {
    await openForm("Inscription dans les soins VIH");
    await visible(page.getByText("Stade clinique OMS"));
    await page.getByText("Stade 2 (adulte)", { exact: true }).click();
    // Not referred out (the first yes-or-no question), on cotrimoxazole (the second).
    await page.getByText("Non", { exact: true }).first().click();
    await page.getByText("Oui", { exact: true }).nth(1).click();
    await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
    await visible(page.getByText("Formulaire enregistré"));
    const obs = await savedObs("633e991f-da9d-4232-b0b2-d245cffa8701");
    if (!obs.includes("Stade")) throw new Error(`the WHO stage was not saved: ${obs}`);
  });

  await step("the-hiv-care-dashboard-shows-her-enrolment", async () => {
    // The chart's HIV care group (the configuration's nav group and dashboard, the patient
    // chart's encounter list): her enrolment, with the answers the form recorded.
    // The group opens expanded (`isExpanded`).
    await page.reload();
    await visible(page.getByRole("button", { name: "Soins VIH" }));
    await page.getByRole("link", { name: "Inscription VIH" }).click();
    await page.waitForURL(/\/chart\/hiv-enrolment/, { timeout: 30000 });
    await visible(page.getByRole("columnheader", { name: "Stade clinique OMS" }));
    await visible(page.getByRole("columnheader", { name: "Date d'inscription" }));
    const row = page.getByRole("row", { name: /Stade OMS 2 adulte/ });
    await visible(row);
    // On cotrimoxazole, not referred out.
    await visible(row.getByRole("cell", { name: "Oui", exact: true }));
    await visible(row.getByRole("cell", { name: "Non", exact: true }));
  });

  await step("write-a-visit-note", async () => {
    await page.reload();
    await page.getByRole("button", { name: "Note de visite" }).first().click();
    await page.getByPlaceholder("Choisissez un diagnostic principal").fill("palud");
    await page.getByText("Paludisme, sans précision", { exact: true }).first().click();
    await page.getByPlaceholder("Ajouter des notes ici").fill("Fièvre, TDR du paludisme positif ; traitement par artéméther-luméfantrine.");
    await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
    await visible(page.getByText("Note de la visite enregistrée"));
    // The note's encounter and its primary diagnosis, on the server.
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const found = await api("GET", `patientdiagnoses?patient=${uuid}&v=custom:(display,rank,certainty)`);
    if (!found.results.some((d) => d.display === "Paludisme, sans précision" && d.rank === 1)) {
      throw new Error(`the diagnosis was not saved: ${JSON.stringify(found.results)}`);
    }
  });

  // The care record: an allergy and a condition, from the chart's summary.
  await step("record-an-allergy", async () => {
    await page.getByRole("link", { name: "Allergies", exact: true }).click();
    await page.getByRole("button", { name: /allergie ou intolérance/i }).first().click();
    const allergen = page.getByRole("combobox", { name: /Allergène/ });
    await visible(allergen);
    await allergen.fill("Amox");
    await page.getByRole("option", { name: "Amoxicilline", exact: true }).click();
    await page.getByText("Urticaire", { exact: true }).click();
    await page.getByText("Sévère", { exact: true }).click();
    await page.getByPlaceholder("Ajouter ici tous commentaires additionnels").fill("Après la première dose");
    await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
    await visible(page.getByText("Allergie enregistrée"));
    // The summary lists it with its reaction; the server keeps it as the form said.
    await visible(page.getByRole("cell", { name: "Amoxicilline" }));
    await visible(page.getByText("Urticaire").first());
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const found = await api("GET", `patient/${uuid}/allergy?v=full`);
    const a = found.results[0];
    if (found.results.length !== 1 || a.display !== "Amoxicilline" || a.allergen.allergenType !== "DRUG" || a.comment !== "Après la première dose") {
      throw new Error(`the allergy was not saved as entered: ${JSON.stringify(found.results)}`);
    }
  });

  await step("record-a-condition", async () => {
    await page.getByRole("link", { name: "Résumé patient" }).click();
    await page.getByRole("button", { name: /conditions? médicales?/i }).first().click();
    await page.getByPlaceholder("Rechercher des conditions médicales").fill("palud");
    await page.getByRole("menuitem", { name: "Paludisme, sans précision" }).first().click();
    await page.getByRole("button", { name: "Enregistrer et fermer" }).click();
    await visible(page.getByText("Condition médicale enregistrée"));
    await visible(page.getByRole("cell", { name: "Paludisme, sans précision" }));
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const found = await api("GET", `condition?patientUuid=${uuid}&v=full`);
    if (found.results.length !== 1 || found.results[0].clinicalStatus !== "ACTIVE") {
      throw new Error(`the condition was not saved as active: ${JSON.stringify(found.results)}`);
    }
  });

  await step("record-a-vaccination", async () => {
    // In the visit, as the app requires: a dose of oral polio vaccine, labelled by the
    // schedule of the configuration.
    await page.getByRole("link", { name: "Vaccinations", exact: true }).click();
    await page.getByRole("button", { name: /vaccinations/i }).first().click();
    await page.getByRole("combobox", { name: /Vaccination/ }).first().click();
    await page.getByRole("option", { name: "Vaccin polio oral (VPO)" }).click();
    await page.getByRole("combobox", { name: /Séquence/ }).click();
    await page.getByRole("option", { name: "VPO 1" }).click();
    await page.getByLabel("Numéro de lot").fill("L-2026-117");
    await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
    await visible(page.getByText("Vaccination enregistrée avec succès"));
    await visible(page.getByText("Vaccin polio oral (VPO)").first());
    // On the server: an immunization-history group in the visit, with the lot entered.
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const found = await api("GET", `obs?patient=${uuid}&concept=CIEL:1421&v=custom:(uuid,groupMembers:(display))`);
    const members = found.results.flatMap((g) => g.groupMembers.map((m) => m.display)).join(" | ");
    if (found.results.length !== 1 || !members.includes("L-2026-117") || !members.includes("Vaccin polio oral (VPO)")) {
      throw new Error(`the vaccination was not saved as entered: ${members}`);
    }
  });

  await step("enrol-in-a-programme", async () => {
    await page.getByRole("link", { name: "Programmes" }).click();
    await page.getByRole("button", { name: "Ajouter inscriptions aux programmes" }).click();
    await page.locator("select#program").selectOption({ label: "Programme de soins et traitement du VIH" });
    await page.locator("select#programStatus").selectOption({ label: "Pré-TARV" });
    await page.getByRole("button", { name: "Sauvegarder et fermer" }).click();
    const row = page.getByRole("row", { name: /Programme de soins et traitement du VIH/ });
    await visible(row.getByText("Pré-TARV"));
    // She starts her treatment: the enrolment's state changes.
    await row.getByRole("button").last().click();
    await page.getByRole("menuitem", { name: "Modifier" }).click();
    await page.locator("select#programStatus").selectOption({ label: "Sous traitement antirétroviral" });
    await page.getByRole("button", { name: "Sauvegarder et fermer" }).click();
    await visible(page.getByText("Enregistrement dans le programme mis à jour"));
    await visible(row.getByText("Sous traitement antirétroviral"));
    // Kept as OpenMRS keeps it: the first state ended when the second began.
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const [enrolment] = (await api("GET", `programenrollment?patient=${uuid}&v=custom:(states:(endDate,state:(concept:(display))))`)).results;
    const states = enrolment.states.map((x) => `${x.state.concept.display}:${x.endDate ? "ended" : "open"}`).sort();
    if (states.join() !== "Pré-TARV:ended,Sous traitement antirétroviral:open") throw new Error(`the states were not recorded: ${states}`);
  });

  await step("pin-a-note-to-the-chart", async () => {
    await page.getByRole("button", { name: "Note épinglée" }).click();
    await page.locator("textarea#sticky-note-text").fill("Vient avec sa sœur, qui traduit en lingala");
    await page.getByRole("button", { name: "Enregistrer", exact: true }).click();
    await visible(page.getByText("Note épinglée créée"));
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const notes = await api("GET", `obs?patient=${uuid}&concept=165095AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&v=custom:(value)`);
    if (notes.results[0]?.value !== "Vient avec sa sœur, qui traduit en lingala") throw new Error(`the note was not kept: ${JSON.stringify(notes)}`);
  });

  await step("attach-a-photo-to-the-chart", async () => {
    // A photograph of a wound (a small PNG), as a nurse's phone would take it.
    const photo = join(mkdtempSync(join(tmpdir(), "e2e-")), "plaie-pied.png");
    writeFileSync(photo, Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAEAAAABACAIAAAAlC+aJAAAAeElEQVR4nO3PQQkAMAzAwAqrfyZrIvY4BoEIuMzZ/brhgga0oAEtaEALGtCCBrSgAS1oQAsa0IIGtKABLWhACxrQgga0oAEtaEALGtCCBrSgAS1oQAsa0IIGtKABLWhACxrQgga0oAEtaEALGtCCBrSgAS1oQAseuzfrAS2gdd8fAAAAAElFTkSuQmCC", "base64"));
    await page.getByRole("link", { name: "Pièces jointes" }).click();
    await page.getByRole("button", { name: "Ajouter pièces jointes" }).click();
    // The limits are the content's settings.
    await visible(page.getByText("La limite de fichier est 5MB. Les fichiers compatibles sont pdf, jpg, jpeg, png."));
    await page.locator('input[type="file"]').setInputFiles(photo);
    await page.locator("textarea#description").fill("Plaie du pied gauche, troisième jour");
    await page.getByRole("dialog").getByRole("button", { name: "Ajouter une pièce jointe" }).click();
    await visible(page.getByText("Ajout terminé"));
    await page.getByRole("dialog").getByRole("button", { name: "Fermer" }).click();
    // Its thumbnail is the photograph, read back from the server with the session cookie.
    const thumbnail = page.locator('img[src*="/attachment/"]').first();
    await visible(thumbnail);
    await page.waitForFunction(() => document.querySelector('img[src*="/attachment/"]')?.naturalWidth === 64, null, { timeout: 30000, polling: 200 });
    await thumbnail.click();
    await visible(page.getByText("Plaie du pied gauche, troisième jour"));
    const uuid = state.chartUrl.match(/patient\/([0-9a-f-]{36})/)[1];
    const [kept] = (await api("GET", `attachment?patient=${uuid}&includeEncounterless=true`)).results;
    if (kept?.filename !== "plaie-pied.png" || kept.bytesContentFamily !== "IMAGE") throw new Error(`the photograph was not kept: ${JSON.stringify(kept)}`);
    await page.keyboard.press("Escape");
    await page.goto(state.chartUrl);
    await visible(page.getByText("Grâce Kapinga"));
  });
}
