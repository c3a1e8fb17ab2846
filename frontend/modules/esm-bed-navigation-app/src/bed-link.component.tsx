import React, { useEffect, useState } from 'react';
import { ConfigurableLink } from '@openmrs/esm-framework';
import { useTranslation } from 'react-i18next';

/** The path shown now, followed as the application navigates. */
function useCurrentPath() {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const follow = () => setPath(window.location.pathname);
    window.addEventListener('single-spa:routing-event', follow);
    window.addEventListener('popstate', follow);
    return () => {
      window.removeEventListener('single-spa:routing-event', follow);
      window.removeEventListener('popstate', follow);
    };
  }, []);
  return path;
}

/**
 * A link of the bed management pages' left panel: `page` is the page's path under
 * `bed-management` (empty for the summary), `key` and `fallback` its label. It looks like
 * the app's own links (the side navigation's classes).
 */
export function bedLink(page: string, key: string, fallback: string) {
  return function BedLink() {
    const { t } = useTranslation();
    const path = useCurrentPath().replace(/\/+$/, '');
    const last = path.split('/').pop() ?? '';
    // A ward's page (its last segment a uuid) belongs to the summary.
    const onWard = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(last);
    const active = page === '' ? last === 'bed-management' || onWard : last === page;
    return (
      <ConfigurableLink
        to={`\${openmrsSpaBase}/bed-management${page ? `/${page}` : ''}`}
        className={`cds--side-nav__link${active ? ' active-left-nav-link' : ''}`}>
        {t(key, fallback)}
      </ConfigurableLink>
    );
  };
}
