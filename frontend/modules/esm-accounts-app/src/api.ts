// The REST calls of the accounts screens, in OpenMRS's wire shapes.
import { openmrsFetch, restBaseUrl, useOpenmrsFetchAll } from '@openmrs/esm-framework';
import useSWR from 'swr';

export interface Ref {
  uuid: string;
  display: string;
}

export interface User {
  uuid: string;
  username: string;
  systemId: string;
  retired: boolean;
  person: Ref;
  roles: Array<Ref>;
}

export interface Role {
  uuid: string;
  name: string;
  description: string | null;
  retired: boolean;
  definedBy: 'content' | 'api';
  privileges: Array<Ref>;
  inheritedRoles: Array<Ref>;
}

export interface Provider {
  uuid: string;
  identifier: string;
  retired: boolean;
  person: Ref | null;
  name: string;
}

const userRep = 'custom:(uuid,username,systemId,retired,person:(uuid,display),roles:(uuid,display))';
const roleRep = 'custom:(uuid,name,description,retired,definedBy,privileges:(uuid,display),inheritedRoles:(uuid,display))';
const providerRep = 'custom:(uuid,identifier,retired,name,person:(uuid,display))';

/** Every page of a list (the server answers at most 100 per page). */
function useList<T>(url: string) {
  const { data, error, isLoading, mutate } = useOpenmrsFetchAll<T>(url);
  return { items: data ?? [], error: error as Error | undefined, isLoading, mutate };
}

export function useUsers(query: string) {
  const q = query.trim() ? `&q=${encodeURIComponent(query.trim())}` : '';
  return useList<User>(`${restBaseUrl}/user?includeAll=true&limit=100&v=${userRep}${q}`);
}

export function useRoles() {
  return useList<Role>(`${restBaseUrl}/role?includeAll=true&limit=100&v=${roleRep}`);
}

export function usePrivileges() {
  return useList<Ref>(`${restBaseUrl}/privilege?limit=100&v=custom:(uuid,display)`);
}

export function useProviders() {
  return useList<Provider>(`${restBaseUrl}/provider?includeAll=true&limit=100&v=${providerRep}`);
}

async function send(method: 'POST' | 'DELETE', path: string, body?: unknown) {
  return openmrsFetch(`${restBaseUrl}/${path}`, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

export interface NewUser {
  givenName: string;
  familyName: string;
  username: string;
  password: string;
  roles: Array<string>;
}

export const createUser = (u: NewUser) =>
  send('POST', 'user', {
    username: u.username,
    password: u.password,
    person: { names: [{ givenName: u.givenName, familyName: u.familyName }] },
    roles: u.roles,
  });
export const setUserRoles = (uuid: string, roles: Array<string>) => send('POST', `user/${uuid}`, { roles });
export const retireUser = (uuid: string, reason: string) =>
  send('DELETE', `user/${uuid}?reason=${encodeURIComponent(reason)}`);
export const unretireUser = (uuid: string) => send('POST', `user/${uuid}`, { retired: false });
export const resetPassword = (uuid: string, newPassword: string) => send('POST', `password/${uuid}`, { newPassword });

export interface RoleChange {
  name?: string;
  description: string;
  privileges: Array<string>;
  inheritedRoles: Array<string>;
}
export const createRole = (r: RoleChange) => send('POST', 'role', r);
export const updateRole = (uuid: string, r: RoleChange) => send('POST', `role/${uuid}`, r);
export const retireRole = (uuid: string) => send('DELETE', `role/${uuid}?reason=${encodeURIComponent('retired by an administrator')}`);

export const createProvider = (p: { person?: string; name?: string; identifier: string }) => send('POST', 'provider', p);
export const retireProvider = (uuid: string, reason: string) =>
  send('DELETE', `provider/${uuid}?reason=${encodeURIComponent(reason)}`);
export const unretireProvider = (uuid: string) => send('POST', `provider/${uuid}`, { retired: false });

/**
 * The server's refusals of a merge (in English, as OpenMRS writes its messages), by how they
 * begin, with the translation key and default of each.
 */
const MERGE_REFUSALS: Array<[string, string, string]> = [
  ['Both patients have an active visit', 'refusedActiveVisits', 'Both patients have an active visit: end one of them before merging.'],
  ['Both patients are enrolled in the programme', 'refusedProgramme', 'Both patients are enrolled in the same programme: complete one of the enrolments before merging.'],
  ['Cannot merge patients: both have active orders', 'refusedOrders', 'Both patients have active orders of the same type: stop one of them before merging.'],
  ['A voided patient cannot be merged', 'refusedVoided', 'A voided patient cannot be merged.'],
];

/** A merge's refusal in the user's language (other explanations as the server gave them). */
export function explainMerge(e: unknown, t: (key: string, fallback: string) => string): string {
  const text = explain(e);
  const known = MERGE_REFUSALS.find(([start]) => text.includes(start));
  return known ? t(known[1], known[2]) : text;
}

/** The server's explanation of a refused request: its message and each field's messages. */
export function explain(e: unknown): string {
  const body = (e as { responseBody?: { error?: { message?: string; fieldErrors?: Record<string, Array<{ message: string }>>; globalErrors?: Array<{ message: string }> } } })
    ?.responseBody?.error;
  if (!body) return e instanceof Error ? e.message : String(e);
  const fields = Object.entries(body.fieldErrors ?? {}).flatMap(([field, errors]) => errors.map((x) => `${field}: ${x.message}`));
  const globals = (body.globalErrors ?? []).map((x) => x.message);
  return [...globals, ...fields].join(' · ') || body.message || '';
}

// Patients' records: the likely duplicates, the merge, the audit trail.

export interface PatientSummary {
  uuid: string;
  display: string;
  identifiers: Array<{ uuid: string; display: string; preferred: boolean }>;
  person: {
    gender: string;
    birthdate: string | null;
    birthdateEstimated: boolean;
    preferredName: { display: string } | null;
    names: Array<{ display: string; preferred: boolean }>;
    preferredAddress: { display: string | null; cityVillage?: string; stateProvince?: string } | null;
    attributes: Array<{ display: string }>;
  };
}

export interface DuplicatePair {
  patientA: PatientSummary;
  patientB: PatientSummary;
  reasons: Array<string>;
}

const patientRep =
  'custom:(uuid,display,identifiers:(uuid,display,preferred),person:(gender,birthdate,birthdateEstimated,preferredName:(display),names:(display,preferred),preferredAddress:(display,cityVillage,stateProvince),attributes:(display)))';

/**
 * The first hundred likely duplicates (the server reads every patient to find them: one
 * page, fetched once, not again each time the window gets the focus).
 */
export function useDuplicates() {
  const { data, error, isLoading, mutate } = useSWR<{ data: { results: Array<DuplicatePair> } }, Error>(
    `${restBaseUrl}/patient/duplicates?limit=100&v=${patientRep}`,
    openmrsFetch,
    { revalidateOnFocus: false },
  );
  return { items: data?.data?.results ?? [], error, isLoading, mutate };
}

export const mergePatients = (preferred: string, nonPreferred: string) =>
  send('POST', `patient/${preferred}/merge`, { nonPreferred });

export interface AuditEntry {
  uuid: string;
  dateCreated: string;
  user: Ref | null;
  clientAddress: string | null;
  recordType: string;
  record: string;
  patients: Array<string>;
  action: 'created' | 'changed' | 'voided' | 'unvoided' | 'purged';
  changes: Array<{ field: string; before: unknown; after: unknown }>;
}

export interface AuditFilter {
  patient?: string;
  user?: string;
  type?: string;
  since?: string;
  until?: string;
}

/** The newest hundred changes the filter selects (`more`: there are older ones). */
export function useAudit(filter: AuditFilter) {
  const params = Object.entries(filter)
    .filter(([, v]) => v)
    .map(([k, v]) => `&${k}=${encodeURIComponent(v as string)}`)
    .join('');
  const { data, error, isLoading, mutate } = useSWR<
    { data: { results: Array<AuditEntry>; links?: Array<{ rel: string }> } },
    Error
  >(`${restBaseUrl}/audit?limit=100${params}`, openmrsFetch);
  const more = (data?.data?.links ?? []).some((l) => l.rel === 'next');
  return { entries: data?.data?.results ?? [], more, error, isLoading, mutate };
}

export function usePatientSearch(query: string) {
  const q = query.trim();
  const { data, error, isLoading } = useSWR<{ data: { results: Array<PatientSummary> } }, Error>(
    q.length >= 2 ? `${restBaseUrl}/patient?q=${encodeURIComponent(q)}&limit=10&v=${patientRep}` : null,
    openmrsFetch,
  );
  return { patients: data?.data?.results ?? [], error, isLoading };
}
