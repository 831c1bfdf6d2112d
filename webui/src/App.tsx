import { MantineProvider } from '@mantine/core';
import { ModalsProvider } from '@mantine/modals';
import { Notifications } from '@mantine/notifications';
import { MutationCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { lazy, Suspense } from 'react';
import { BrowserRouter, Navigate, Route, Routes } from 'react-router';
import { setUnauthorizedHandler } from './api/http';
import { authKeys } from './api/queries/auth';
import { ApiError } from './api/errors';
import { standbyRefusals } from './api/standbyRefusal';
import { AuthGate } from './auth/AuthGate';
import { Layout } from './components/Layout';
import { PageLoader } from './components/PageLoader';
import { theme } from './theme';
import { OverviewPage } from './pages/OverviewPage';

// Pages other than the overview load on demand: the first paint needs only the overview.
const ServicesPage = lazy(() => import('./pages/ServicesPage'));
const ServiceDetailPage = lazy(() => import('./pages/ServiceDetailPage'));
const ServiceFormPage = lazy(() => import('./pages/ServiceFormPage'));
const SchedulerGuidePage = lazy(() => import('./pages/SchedulerGuidePage'));
const HaPage = lazy(() => import('./pages/HaPage'));
const BgpPage = lazy(() => import('./pages/BgpPage'));
const RevisionsPage = lazy(() => import('./pages/RevisionsPage'));
const EventsPage = lazy(() => import('./pages/EventsPage'));
const UsersPage = lazy(() => import('./pages/UsersPage'));
const TokensPage = lazy(() => import('./pages/TokensPage'));
const FirewallPage = lazy(() => import('./pages/FirewallPage'));
const NetworkPage = lazy(() => import('./pages/NetworkPage'));
const AlertsPage = lazy(() => import('./pages/AlertsPage'));
const ChangePasswordPage = lazy(() => import('./pages/ChangePasswordPage'));
const ImportPage = lazy(() => import('./pages/ImportPage'));
const BackupPage = lazy(() => import('./pages/BackupPage'));
const CertificatePage = lazy(() => import('./pages/CertificatePage'));
const FirmwarePage = lazy(() => import('./pages/FirmwarePage'));
const LogsPage = lazy(() => import('./pages/LogsPage'));
const DiagnosticsPage = lazy(() => import('./pages/DiagnosticsPage'));

const queryClient = new QueryClient({
  // A standby's refusal of an edit becomes one banner naming the active node (StandbyBanner).
  mutationCache: new MutationCache({ onError: standbyRefusals.onError, onSuccess: standbyRefusals.onSuccess }),
  defaultOptions: {
    queries: {
      staleTime: 5_000,
      // An auth or permission error will not go away by asking again.
      retry: (count, error) => !(error instanceof ApiError && error.status >= 400 && error.status < 500) && count < 2,
    },
  },
});

setUnauthorizedHandler(() => queryClient.setQueryData(authKeys.me, null));

export function App() {
  return (
    <MantineProvider theme={theme} defaultColorScheme="auto">
      {/* Live events arrive as toasts; under the modals' layer (200) they no longer cover a dialog
          (the failover drill's result) while still showing above the page and its header. */}
      <Notifications position="top-right" zIndex={150} />
      <QueryClientProvider client={queryClient}>
        <ModalsProvider>
        <BrowserRouter>
          <AuthGate>
            <Layout>
              <Suspense fallback={<PageLoader />}>
                <Routes>
                  <Route path="/" element={<OverviewPage />} />
                  <Route path="/services" element={<ServicesPage />} />
                  <Route path="/services/new" element={<ServiceFormPage />} />
                  <Route path="/services/:id" element={<ServiceDetailPage />} />
                  <Route path="/services/:id/edit" element={<ServiceFormPage />} />
                  <Route path="/guide" element={<SchedulerGuidePage />} />
                  <Route path="/ha" element={<HaPage />} />
                  <Route path="/bgp" element={<BgpPage />} />
                  <Route path="/revisions" element={<RevisionsPage />} />
                  <Route path="/events" element={<EventsPage />} />
                  <Route path="/users" element={<UsersPage />} />
                  <Route path="/tokens" element={<TokensPage />} />
                  <Route path="/firewall" element={<FirewallPage />} />
                  <Route path="/network" element={<NetworkPage />} />
                  <Route path="/alerts" element={<AlertsPage />} />
                  <Route path="/import" element={<ImportPage />} />
                  <Route path="/system/backup" element={<BackupPage />} />
                  <Route path="/system/certificate" element={<CertificatePage />} />
                  <Route path="/system/firmware" element={<FirmwarePage />} />
                  <Route path="/system/logs" element={<LogsPage />} />
                  <Route path="/system/diagnostics" element={<DiagnosticsPage />} />
                  <Route path="/account/password" element={<ChangePasswordPage />} />
                  <Route path="*" element={<Navigate to="/" replace />} />
                </Routes>
              </Suspense>
            </Layout>
          </AuthGate>
        </BrowserRouter>
        </ModalsProvider>
      </QueryClientProvider>
    </MantineProvider>
  );
}
