State Recv-Q Send-Q Local Address:Port Peer Address:PortProcess                                             
ESTAB 0      0         192.0.2.10:958     192.0.2.2:2049 rto:0.2 ato:0.04 qack:7 bidir cwnd:10 reordering:0 
ESTAB 0      0         192.0.2.10:722     192.0.2.2:2049 rto:0.2 ato:0.04 cwnd:10 reordering:0              
ESTAB 0      0         192.0.2.10:676     192.0.2.2:2049 rto:0.2 ato:0.04 qack:11 bidir cwnd:10 reordering:0
ESTAB 0      0         192.0.2.10:747     192.0.2.2:2049 rto:0.2 ato:0.04 qack:7 bidir cwnd:10 reordering:0 
