/** What follows a withdrawal's reason wherever it is shown (the alarm, the BGP page): the
 * announcement watch in the apply helper puts the VIPs back by itself. */
export const ANNOUNCES_AGAIN = 'It announces again by itself once fit.';
