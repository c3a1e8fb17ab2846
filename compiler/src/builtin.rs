//! Metadata that OpenMRS core (and common modules) provide without any content package
//! defining it: privileges, roles, concept datatypes and classes, map types, identifier
//! validators. Packages refer to these by name; the compiler resolves against them and
//! puts them in the bundle so the runtime can serve them.

use crate::csvtable::derive_uuid;

/// Core privileges: those OpenMRS core creates at start-up (`PrivilegeConstants` marked to
/// be added on start-up, and its seed data), and the few the runtime itself enforces.
pub const CORE_PRIVILEGES: &[&str] = &[
    "Add Allergies",
    "Add Cohorts",
    "Add Concept Proposals",
    "Add Encounters",
    "Add HL7 Inbound Archive",
    "Add HL7 Inbound Exception",
    "Add HL7 Inbound Queue",
    "Add HL7 Source",
    "Add Observations",
    "Add Orders",
    "Add Patient Identifiers",
    "Add Patient Programs",
    "Add Patients",
    "Add People",
    "Add Problems",
    "Add Relationships",
    "Add Report Objects",
    "Add Reports",
    "Add Users",
    "Add Visits",
    "Assign System Developer Role",
    "Configure Visits",
    "Delete Cohorts",
    "Delete Concept Proposals",
    "Delete Conditions",
    "Delete Diagnoses",
    "Delete Encounters",
    "Delete HL7 Inbound Archive",
    "Delete HL7 Inbound Exception",
    "Delete HL7 Inbound Queue",
    "Delete Medication Dispense",
    "Delete Notes",
    "Delete Observations",
    "Delete Orders",
    "Delete Patient Identifiers",
    "Delete Patient Programs",
    "Delete Patients",
    "Delete People",
    "Delete Relationships",
    "Delete Report Objects",
    "Delete Reports",
    "Delete Users",
    "Delete Visits",
    "Edit Allergies",
    "Edit Cohorts",
    "Edit Concept Proposals",
    "Edit Conditions",
    "Edit Diagnoses",
    "Edit Encounters",
    "Edit Medication Dispense",
    "Edit Notes",
    "Edit Observations",
    "Edit Orders",
    "Edit Patient Identifiers",
    "Edit Patient Programs",
    "Edit Patients",
    "Edit People",
    "Edit Problems",
    "Edit Relationships",
    "Edit Report Objects",
    "Edit Reports",
    "Edit User Passwords",
    "Edit Users",
    "Edit Visits",
    "Form Entry",
    "Get Alerts",
    "Get Allergies",
    "Get Care Settings",
    "Get Concept Attribute Types",
    "Get Concept Classes",
    "Get Concept Datatypes",
    "Get Concept Map Types",
    "Get Concept Proposals",
    "Get Concept Reference Terms",
    "Get Concept Sources",
    "Get Concepts",
    "Get Conditions",
    "Get Database Changes",
    "Get Diagnoses",
    "Get Diagnoses Attribute Types",
    "Get Encounter Roles",
    "Get Encounter Types",
    "Get Encounters",
    "Get Field Types",
    "Get Forms",
    "Get Global Properties",
    "Get HL7 Inbound Archive",
    "Get HL7 Inbound Exception",
    "Get HL7 Inbound Queue",
    "Get HL7 Source",
    "Get Identifier Types",
    "Get Location Attribute Types",
    "Get Locations",
    "Get Medication Dispense",
    "Get Notes",
    "Get Observations",
    "Get Order Frequencies",
    "Get Order Set Attribute Types",
    "Get Order Sets",
    "Get Order Types",
    "Get Orders",
    "Get Patient Cohorts",
    "Get Patient Identifiers",
    "Get Patient Programs",
    "Get Patients",
    "Get People",
    "Get Person Attribute Types",
    "Get Privileges",
    "Get Problems",
    "Get Programs",
    "Get Provider Attribute Types",
    "Get Providers",
    "Get Relationship Types",
    "Get Relationships",
    "Get Roles",
    "Get Users",
    "Get Visit Attribute Types",
    "Get Visit Types",
    "Get Visits",
    "Manage Address Templates",
    "Manage Alerts",
    "Manage Concept Attribute Types",
    "Manage Concept Classes",
    "Manage Concept Datatypes",
    "Manage Concept Map Types",
    "Manage Concept Name tags",
    "Manage Concept Reference Terms",
    "Manage Concept Sources",
    "Manage Concept Stop Words",
    "Manage Concepts",
    "Manage Encounter Roles",
    "Manage Encounter Types",
    "Manage Field Types",
    "Manage FormEntry XSN",
    "Manage Forms",
    "Manage Global Properties",
    "Manage HL7 Messages",
    "Manage Identifier Types",
    "Manage Implementation Id",
    "Manage Location Attribute Types",
    "Manage Location Tags",
    "Manage Locations",
    "Manage Modules",
    "Manage Order Frequencies",
    "Manage Order Set Attribute Types",
    "Manage Order Sets",
    "Manage Order Types",
    "Manage Person Attribute Types",
    "Manage Privileges",
    "Manage Programs",
    "Manage Providers",
    "Manage Relationship Types",
    "Manage Relationships",
    "Manage Roles",
    "Manage Scheduler",
    "Manage Search Index",
    "Manage Tokens",
    "Manage Visit Attribute Types",
    "Manage Visit Types",
    "Patient Dashboard - View Demographics Section",
    "Patient Dashboard - View Encounters Section",
    "Patient Dashboard - View Forms Section",
    "Patient Dashboard - View Graphs Section",
    "Patient Dashboard - View Overview Section",
    "Patient Dashboard - View Patient Summary",
    "Patient Dashboard - View Regimen Section",
    "Patient Overview - View Allergies",
    "Patient Overview - View Patient Flags",
    "Patient Overview - View Problem List",
    "Patient Overview - View Programs",
    "Patient Overview - View Relationships",
    "Purge Field Types",
    "Purge Global Properties",
    "Purge Patients",
    "Purge Users",
    "Remove Allergies",
    "Remove Problems",
    "Task: Modify Allergies",
    "Update HL7 Inbound Archive",
    "Update HL7 Inbound Exception",
    "Update HL7 Inbound Queue",
    "Update HL7 Source",
    "Upload XSN",
    "View Administration Functions",
    "View Allergies",
    "View Concept Classes",
    "View Concept Datatypes",
    "View Concept Proposals",
    "View Concept Sources",
    "View Concepts",
    "View Data Entry Statistics",
    "View Encounter Types",
    "View Encounters",
    "View Field Types",
    "View Forms",
    "View Global Properties",
    "View Identifier Types",
    "View Locations",
    "View Navigation Menu",
    "View Observations",
    "View Order Types",
    "View Orders",
    "View Patient Cohorts",
    "View Patient Identifiers",
    "View Patient Programs",
    "View Patients",
    "View People",
    "View Person Attribute Types",
    "View Privileges",
    "View Problems",
    "View Programs",
    "View Providers",
    "View Relationship Types",
    "View Relationships",
    "View Report Objects",
    "View Reports",
    "View Roles",
    "View Unpublished Forms",
    "View Users",
];

/// Core roles with their OpenMRS uuids.
pub const CORE_ROLES: &[(&str, &str, &str)] = &[
    (
        "Anonymous",
        "774b2af3-6437-4e5a-a310-547554c7c65c",
        "Privileges for non-authenticated users.",
    ),
    (
        "Authenticated",
        "f7fd42ef-880e-40c5-972d-e4ae7c990de2",
        "Privileges gained once authentication has been established.",
    ),
    (
        "Provider",
        "8d94f280-c2cc-11de-8d13-0010c6dffd0f",
        "All users with the 'Provider' role will appear as options in the default Infopath",
    ),
    (
        "System Developer",
        "8d94f852-c2cc-11de-8d13-0010c6dffd0f",
        "Developers of the OpenMRS .. have additional access to change fundamental structure of the database model.",
    ),
];

/// The role that holds every privilege.
pub const SUPER_USER_ROLE: &str = "System Developer";

/// Concept datatypes: name, uuid, HL7 abbreviation.
pub const DATATYPES: &[(&str, &str, &str)] = &[
    ("Numeric", "8d4a4488-c2cc-11de-8d13-0010c6dffd0f", "NM"),
    ("Coded", "8d4a48b6-c2cc-11de-8d13-0010c6dffd0f", "CWE"),
    ("Text", "8d4a4ab4-c2cc-11de-8d13-0010c6dffd0f", "ST"),
    ("N/A", "8d4a4c94-c2cc-11de-8d13-0010c6dffd0f", "ZZ"),
    ("Document", "8d4a4e74-c2cc-11de-8d13-0010c6dffd0f", "RP"),
    ("Date", "8d4a505e-c2cc-11de-8d13-0010c6dffd0f", "DT"),
    ("Time", "8d4a591e-c2cc-11de-8d13-0010c6dffd0f", "TM"),
    ("Datetime", "8d4a5af4-c2cc-11de-8d13-0010c6dffd0f", "TS"),
    ("Boolean", "8d4a5cca-c2cc-11de-8d13-0010c6dffd0f", "BIT"),
    ("Rule", "8d4a5e96-c2cc-11de-8d13-0010c6dffd0f", "ZZ"),
    (
        "Structured Numeric",
        "8d4a606c-c2cc-11de-8d13-0010c6dffd0f",
        "SN",
    ),
    ("Complex", "8d4a6242-c2cc-11de-8d13-0010c6dffd0f", "ED"),
];

/// Seed concept classes of OpenMRS core.
pub const CONCEPT_CLASSES: &[(&str, &str)] = &[
    ("Test", "8d4907b2-c2cc-11de-8d13-0010c6dffd0f"),
    ("Procedure", "8d490bf4-c2cc-11de-8d13-0010c6dffd0f"),
    ("Drug", "8d490dfc-c2cc-11de-8d13-0010c6dffd0f"),
    ("Diagnosis", "8d4918b0-c2cc-11de-8d13-0010c6dffd0f"),
    ("Finding", "8d491a9a-c2cc-11de-8d13-0010c6dffd0f"),
    ("Anatomy", "8d491c7a-c2cc-11de-8d13-0010c6dffd0f"),
    ("Question", "8d491e50-c2cc-11de-8d13-0010c6dffd0f"),
    ("LabSet", "8d492026-c2cc-11de-8d13-0010c6dffd0f"),
    ("MedSet", "8d4923b4-c2cc-11de-8d13-0010c6dffd0f"),
    ("ConvSet", "8d492594-c2cc-11de-8d13-0010c6dffd0f"),
    ("Misc", "8d492774-c2cc-11de-8d13-0010c6dffd0f"),
    ("Symptom", "8d492954-c2cc-11de-8d13-0010c6dffd0f"),
    ("Symptom/Finding", "8d492b2a-c2cc-11de-8d13-0010c6dffd0f"),
    ("Specimen", "8d492d0a-c2cc-11de-8d13-0010c6dffd0f"),
    ("Misc Order", "8d492ee0-c2cc-11de-8d13-0010c6dffd0f"),
];

/// Order types core creates: (name, uuid, Java class, description).
pub const ORDER_TYPES: &[(&str, &str, &str, &str)] = &[
    (
        "Drug Order",
        "131168f4-15f5-102d-96e4-000c29c2a5d7",
        "org.openmrs.DrugOrder",
        "An order for a medication to be given to the patient",
    ),
    (
        "Test Order",
        "52a447d3-a64a-11e3-9aeb-50e549534c5e",
        "org.openmrs.TestOrder",
        "Order type for test orders",
    ),
];

/// Care settings core creates: (name, uuid, type, description). No content folder defines
/// care settings (Initializer has none).
pub const CARE_SETTINGS: &[(&str, &str, &str, &str)] = &[
    (
        "Outpatient",
        "6f0c9a92-6f24-11e3-af88-005056821db0",
        "OUTPATIENT",
        "Out-patient care setting",
    ),
    (
        "Inpatient",
        "c365e560-c3ec-11e3-9c1a-0800200c9a66",
        "INPATIENT",
        "In-patient care setting",
    ),
];

/// Concept map types known to core.
pub const MAP_TYPES: &[&str] = &[
    "SAME-AS",
    "NARROWER-THAN",
    "BROADER-THAN",
    "Associated finding",
    "Associated morphology",
    "Associated procedure",
    "Associated with",
    "Causative agent",
    "Finding site",
    "Has specimen",
    "Laterality",
    "Severity",
    "Has access",
    "Has direct device",
    "Has interpretation",
    "Is a",
    "Q-AND-A",
    "CONCEPT-SET",
];

/// Uuid of the SAME-AS map type.
pub const SAME_AS_UUID: &str = "35543629-7d8c-11e1-909d-c80aa9edcf4e";

pub fn map_type_uuid(name: &str) -> String {
    if name == "SAME-AS" {
        SAME_AS_UUID.to_string()
    } else {
        derive_uuid(&format!("conceptmaptype/{name}"))
    }
}

/// Check-digit validators that core and idgen provide (Java class names).
pub const IDENTIFIER_VALIDATORS: &[&str] = &[
    "org.openmrs.patient.impl.LuhnIdentifierValidator",
    "org.openmrs.patient.impl.VerhoeffIdentifierValidator",
    "org.openmrs.module.idgen.validator.LuhnMod10IdentifierValidator",
    "org.openmrs.module.idgen.validator.LuhnMod25IdentifierValidator",
    "org.openmrs.module.idgen.validator.LuhnMod30IdentifierValidator",
];

/// Privileges that the modules the runtime stands in for, and the modules real packages
/// commonly run beside it, create at start-up (module, names). Roles of a package refer to
/// them without defining them.
pub const MODULE_PRIVILEGES: &[(&str, &[&str])] = &[
    (
        "legacyui",
        &[
            "Patient Dashboard - View Visits Section",
            "Patient Overview - View Patient Actions",
        ],
    ),
    ("webservices.rest", &["Manage RESTWS", "View RESTWS"]),
    (
        "idgen",
        &[
            "Manage Identifier Sources",
            "Manage Auto Generation Options",
            "Generate Batch of Identifiers",
            "Upload Batch of Identifiers",
            "Manage Identifier Sequence",
        ],
    ),
    (
        "emrapi",
        &[
            "Edit conditions",
            "Get conditions",
            "Get Procedures",
            "Manage Procedures",
            "Purge Procedures",
            "Get Procedure Types",
            "Manage Procedure Types",
            "Purge Procedure Types",
        ],
    ),
    (
        "queue",
        &[
            "Get Queues",
            "Get Queue Entries",
            "Get Queue Rooms",
            "Manage Queues",
            "Manage Queue Entries",
            "Manage Queue Rooms",
            "Purge Queues",
            "Purge Queue Entries",
            "Purge Queue Rooms",
        ],
    ),
    (
        "bedmanagement",
        &[
            "Get Beds",
            "Edit Beds",
            "Assign Beds",
            "Get Admission Locations",
            "Edit Admission Locations",
            "Get Bed Type",
            "Edit Bed Type",
            "Get Bed Tags",
            "Edit Bed Tags",
        ],
    ),
    (
        "appointments",
        &[
            "View Appointments",
            "Manage Appointments",
            "View Appointment Services",
            "Manage Appointment Services",
            "Manage Appointment Specialities",
            "Manage Own Appointments",
            "Reset Appointment Status",
            "Appointments: Invite Providers",
        ],
    ),
    (
        "attachments",
        &[
            "App: attachments.attachments.page",
            "View Attachments",
            "Create Attachments",
        ],
    ),
    (
        "cohort",
        &[
            "View Cohorts In Cohort Module",
            "Edit Cohorts In Cohort Module",
            "Manage Cohorts In Cohort Module",
        ],
    ),
    (
        "billing",
        &[
            "View Cashier Bills",
            "Manage Cashier Bills",
            "Delete Cashier Bills",
            "Purge Cashier Bills",
            "Adjust Cashier Bills",
            "Refund Money",
            "Reprint Receipt",
            "View Cashier Metadata",
            "Manage Cashier Metadata",
            "Purge Cashier Metadata",
            "View Cashier Timesheets",
            "Manage Cashier Timesheets",
            "Purge Cashier Timesheets",
            "App: View Cashier App",
            "App: Access Cashier Tasks",
            "Task: Create new bill",
            "Task: Adjust Cashier Bills",
            "Task: Cashier Timesheets",
            "Task: Manage Cashier Module",
            "Task: Manage Cashier Metadata",
            "Task: View Cashier Reports",
            "Manage Bill Discounts",
            "Approve Bill Discounts",
            "View Bill Discounts",
            "Request Bill Refunds",
            "Approve Bill Refunds",
            "Complete Bill Refunds",
            "View Bill Refunds",
        ],
    ),
    (
        "reporting",
        &[
            "Manage Reports",
            "Manage Report Definitions",
            "Manage Data Set Definitions",
            "Manage Indicator Definitions",
            "Manage Dimension Definitions",
            "Manage Cohort Definitions",
            "Manage Report Designs",
            "Manage Scheduled Report Tasks",
            "Run Reports",
        ],
    ),
    (
        "metadatamapping",
        &["Manage Metadata Mapping", "View Metadata Via Mapping"],
    ),
    ("addresshierarchy", &["Manage Address Hierarchy"]),
    (
        "patientflags",
        &[
            "Manage Flags",
            "Test Flags",
            "View Flags",
            "Manage Patient Flags",
            "View Patient Flags",
        ],
    ),
    (
        "providermanagement",
        &[
            "Provider Management API",
            "Provider Management API - Read-only",
            "Provider Management Dashboard - View Providers",
            "Provider Management Dashboard - Edit Providers",
            "Provider Management Dashboard - View Patients",
            "Provider Management Dashboard - Edit Patients",
            "Provider Management Dashboard - View Historical",
            "Provider Management - Admin",
        ],
    ),
    (
        "stockmanagement",
        &[
            "App: stockmanagement.dashboard",
            "App: stockmanagement.stockItems",
            "Task: stockmanagement.stockItems.mutate",
            "Task: stockmanagement.stockItems.dispense.qty",
            "Task: stockmanagement.stockItems.dispense",
            "App: stockmanagement.userRoleScopes",
            "Task: stockmanagement.userRoleScopes.mutate",
            "App: stockmanagement.stockoperations",
            "Task: stockmanagement.stockoperations.mutate",
            "Task: stockmanagement.stockoperations.approve",
            "Task: stockmanagement.stockoperations.receiveitems",
            "App: stockmanagement.stockSources",
            "Task: stockmanagement.stockSources.mutate",
            "App: stockmanagement.stockOperationType",
            "Task: stockmanagement.party.read",
            "App: stockmanagement.reports",
            "Task: stockmanagement.reports.mutate",
        ],
    ),
];

/// Location tags that modules create at start-up, or that OpenMRS tooling expects under
/// well-known uuids (name, uuid): appframework's Login Location, the reference metadata's
/// Visit, Admission and Transfer Locations (the uuids the O3 modules default to), the
/// queue and appointments modules' tags, and stock management's. A package's own tag of
/// the same name wins.
pub const MODULE_LOCATION_TAGS: &[(&str, &str)] = &[
    ("Login Location", "b8bbf83e-645f-451f-8efe-a0db56f09676"),
    ("Visit Location", "37dd4458-dc9e-4ae6-a1f1-789c1162d37b"),
    ("Admission Location", "1c783dca-fd54-4ea8-a0fc-2875374e9cb6"),
    ("Transfer Location", "8d4626ca-7abd-42ad-be48-56767bbcf272"),
    ("Queue Location", ""),
    ("Appointment Location", ""),
    ("Main Pharmacy", "89a80c4d-2899-11ed-bdcb-507b9dea1806"),
    ("Dispensary", "fe7c970f-2aba-11ed-ba4a-507b9dea1806"),
    ("Main Store", "e539ebca-2899-11ed-bdcb-507b9dea1806"),
];

/// The OpenMRS platform version the runtime stands in for (`war.openmrs` requirements).
pub const PLATFORM_VERSION: &str = model::PLATFORM_VERSION;

/// The version of module `id` the runtime stands in for, if it does (`omod.<id>`).
pub fn provided_module(id: &str) -> Option<&'static str> {
    model::PROVIDED_MODULES
        .iter()
        .find(|(m, _, _)| *m == id)
        .map(|(_, _, v)| *v)
}

/// Finds a core privilege by exact or case-insensitive name.
pub fn core_privilege(name: &str) -> Option<&'static str> {
    all_privileges().find(|p| p.eq_ignore_ascii_case(name))
}

/// Core's privileges, then the modules', without case-insensitive repeats (emrapi's
/// `Get conditions` is core's `Get Conditions` on a real server's database).
pub fn all_privileges() -> impl Iterator<Item = &'static str> {
    let mut seen = std::collections::HashSet::new();
    CORE_PRIVILEGES
        .iter()
        .chain(MODULE_PRIVILEGES.iter().flat_map(|(_, names)| names.iter()))
        .copied()
        .filter(move |p| seen.insert(p.to_lowercase()))
}

pub fn datatype(name: &str) -> Option<&'static (&'static str, &'static str, &'static str)> {
    DATATYPES.iter().find(|d| d.0.eq_ignore_ascii_case(name))
}
