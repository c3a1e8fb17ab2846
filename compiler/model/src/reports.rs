//! Report definitions (`reports/*.json`): what the reporting module's definitions say,
//! compiled and resolved at build time. Every reference here is a uuid of the content
//! (concepts, encounter and visit types, programmes and their states, appointment services,
//! identifier and person attribute types); the runtime evaluates them over its store.
//!
//! Dates in criteria are the report's parameters: `startDate` and `endDate`, whole days
//! (the period runs from the start of the first to the end of the last).

use crate::Localized;
use serde::{Deserialize, Serialize};

/// One report, as the reporting module's `ReportDefinition` with its designs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportDefinition {
    pub uuid: String,
    /// Names and descriptions by locale; the first locale of the content's defaults wins.
    pub name: Localized,
    pub description: Localized,
    pub parameters: Vec<ReportParameter>,
    pub designs: Vec<ReportDesign>,
    pub data_sets: Vec<ReportDataSet>,
    pub dhis2: Option<Dhis2Mapping>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReportParameter {
    StartDate,
    EndDate,
    Location,
}

impl ReportParameter {
    pub const ALL: [ReportParameter; 3] = [
        ReportParameter::StartDate,
        ReportParameter::EndDate,
        ReportParameter::Location,
    ];

    /// The name the reporting module gives it (`${startDate}`).
    pub fn name(self) -> &'static str {
        match self {
            ReportParameter::StartDate => "startDate",
            ReportParameter::EndDate => "endDate",
            ReportParameter::Location => "location",
        }
    }
}

/// A way to render a run (the reporting module's `ReportDesign` with its renderer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportDesign {
    pub uuid: String,
    pub name: String,
    pub format: DesignFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DesignFormat {
    Csv,
    Excel,
}

/// One data set of a report, under its name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportDataSet {
    pub name: String,
    pub kind: DataSetKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DataSetKind {
    /// The reporting module's cohort cross-tab: one row of cells, each cell the patients
    /// of a row criterion and a column criterion, named `<row>.<column>`.
    CrossTab {
        rows: Vec<Dimension>,
        columns: Vec<Dimension>,
    },
    /// One line per patient of the population, with the chosen columns.
    LineList {
        population: Criterion,
        columns: Vec<LineColumn>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dimension {
    pub name: String,
    pub criterion: Criterion,
}

/// Which patients: the reporting module's cohort definitions, composed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Criterion {
    All(Vec<Criterion>),
    Any(Vec<Criterion>),
    Not(Box<Criterion>),
    /// A visit started in the window, of one of the types (any when empty), at the
    /// report's location when `at_location` and the report takes one.
    Visit {
        visit_types: Vec<String>,
        when: When,
        at_location: bool,
    },
    /// An encounter of one of the types (any when empty) in the window.
    Encounter {
        encounter_types: Vec<String>,
        when: When,
        at_location: bool,
    },
    /// The patient's observations of a question in the window: any, or the first or last
    /// one, whose value passes the test. Without an observation, no match (as the
    /// reporting module's obs cohorts: `not in` needs an observation too).
    Obs {
        concept: String,
        which: Which,
        when: When,
        test: ValueTest,
    },
    /// Enrolled in a programme: active at the end date, or enrolled during the period;
    /// in a workflow state at the end date when one is named.
    Enrolled {
        programme: String,
        state: Option<String>,
        when: When,
    },
    /// `M`, `F`, `O`, `U` (unknown): any of them.
    Gender(Vec<String>),
    /// Age at the end date, both bounds inclusive (the reporting module's age cohort).
    Age {
        min: Option<Age>,
        max: Option<Age>,
    },
    /// Not dead at the end date.
    Alive,
    /// Died in the window.
    Died {
        when: When,
    },
    /// An appointment of one of the services (any when empty) starting in the window, in
    /// one of the statuses (any when empty).
    Appointment {
        services: Vec<String>,
        statuses: Vec<String>,
        when: When,
    },
}

/// A period of time relative to the report's dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum When {
    /// From the start date to the end date.
    Period,
    /// Before the start date.
    BeforeStart,
    /// Anything up to the end date.
    UpToEnd,
    /// The months before the end date (`months` whole months back from it).
    MonthsBeforeEnd(u32),
    /// The state at the end date (enrolments).
    AtEnd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Which {
    Any,
    First,
    Last,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ValueTest {
    Exists,
    In(Vec<String>),
    NotIn(Vec<String>),
    Range { min: Option<f64>, max: Option<f64> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Age {
    pub amount: u32,
    pub unit: AgeUnit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AgeUnit {
    Days,
    Months,
    Years,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineColumn {
    pub name: String,
    pub value: LineValue,
}

/// What a line list's column shows of a patient.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LineValue {
    /// The preferred identifier, or the one of this type.
    Identifier(Option<String>),
    Name,
    Gender,
    /// Whole years at the end date.
    Age,
    Birthdate,
    /// A person attribute's value (a telephone number).
    Attribute(String),
    /// The day of the last visit up to the end date.
    LastVisitDate,
    /// The last observation of a question up to the end date: its value, or its day.
    LastObsValue(String),
    LastObsDate(String),
    /// The day the patient was last enrolled in a programme.
    EnrolmentDate(String),
    /// The day of the last appointment in the period matching the population's
    /// appointment criterion, and its service.
    AppointmentDate,
    AppointmentService,
}

/// How a report's figures go to DHIS2 (`dataValueSets`): which cell is which data element
/// and category option combination of which data set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dhis2Mapping {
    pub data_set: String,
    pub values: Vec<Dhis2Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dhis2Value {
    /// The cell's column name in the report's first data set (`<row>.<column>`).
    pub column: String,
    pub data_element: String,
    pub category_option_combo: Option<String>,
}

/// The patient flags module's definitions (`flags/*.json`): flags whose criteria are the
/// reports' criteria, evaluated for one patient on the day (both report dates are that
/// day), with the priorities and tags they name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PatientFlags {
    /// By uuid.
    pub flags: Vec<FlagDefinition>,
    /// By rank, then uuid.
    pub priorities: Vec<FlagPriority>,
    /// By uuid.
    pub tags: Vec<FlagTag>,
}

/// One flag (`org.openmrs.module.patientflags.Flag`): a patient meeting its criterion on
/// the day is flagged with its message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlagDefinition {
    pub uuid: String,
    pub name: String,
    /// By locale.
    pub message: Localized,
    pub criterion: Criterion,
    /// The criteria as the content wrote them (compact JSON, references as written): the
    /// module's `criteria` text, which for its own flags is SQL.
    pub criteria_text: String,
    /// A priority's uuid.
    pub priority: Option<String>,
    /// Tags' uuids.
    pub tags: Vec<String>,
    pub enabled: bool,
    pub retired: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlagPriority {
    pub uuid: String,
    pub name: String,
    /// What the legacy UI wrote as a CSS style; carried as written.
    pub style: String,
    /// Lower ranks come first.
    pub rank: i32,
    pub retired: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlagTag {
    pub uuid: String,
    pub name: String,
    /// Roles' names: the users the module shows the tag's flags to.
    pub roles: Vec<String>,
    /// Where the legacy UI shows them (`Patient Dashboard`, `Patient Page`...), as written.
    pub display_points: Vec<String>,
    pub retired: bool,
}
