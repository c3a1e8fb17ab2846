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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A link of an app's left panel: `app` is the app's path under the SPA (`bed-management`),
 * `page` the page's path under it (empty for the app's first page), `key` and `fallback`
 * its label. The first page is also active on the app's own path and on a record's page
 * (its last segment a uuid, as a ward's). It looks like the apps' own links (the side
 * navigation's classes).
 */
export function sideLink(app: string, page: string, key: string, fallback: string) {
  return function SideLink() {
    const { t } = useTranslation();
    const path = useCurrentPath().replace(/\/+$/, '');
    const last = path.split('/').pop() ?? '';
    const active = page === '' ? last === app || UUID.test(last) : last === page;
    return (
      <ConfigurableLink
        to={`\${openmrsSpaBase}/${app}${page ? `/${page}` : ''}`}
        className={`cds--side-nav__link${active ? ' active-left-nav-link' : ''}`}>
        {t(key, fallback)}
      </ConfigurableLink>
    );
  };
}
